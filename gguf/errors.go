package gguf

import "errors"

// Sentinel errors. Errors returned by Parse, Open and TensorData wrap one of
// these; test with errors.Is.
var (
	ErrBadMagic   = errors.New("gguf: bad magic (not a GGUF file)")
	ErrVersion    = errors.New("gguf: unsupported version")
	ErrTruncated  = errors.New("gguf: file truncated")
	ErrInvalid    = errors.New("gguf: invalid file")
	ErrNotFound   = errors.New("gguf: tensor not found")
	ErrClosed     = errors.New("gguf: file closed")
	ErrBadType    = errors.New("gguf: unsupported tensor type")
	ErrBadLength  = errors.New("gguf: bad length")
	ErrBadValue   = errors.New("gguf: unsupported metadata value")
	ErrNotFinite  = errors.New("gguf: value is not finite")
	ErrDuplicated = errors.New("gguf: duplicate name")
)

// FormatError describes what is wrong with a file and where: the key, tensor
// or header field at fault. It unwraps to one of the sentinel errors.
type FormatError struct {
	Where string // e.g. `key "general.alignment"`, `tensor "blk.0.attn_q.weight"`; may be empty
	Msg   string // why, e.g. "data [x, y) runs past end of file (size z)"
	Err   error  // sentinel
}

func (e *FormatError) Error() string {
	if e.Where == "" {
		return "gguf: " + e.Msg
	}
	return "gguf: " + e.Where + ": " + e.Msg
}

func (e *FormatError) Unwrap() error { return e.Err }
