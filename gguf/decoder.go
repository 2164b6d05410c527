package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decoder is a bounds-checked little-endian cursor over the whole file.
// Invariant: 0 <= off <= len(buf). Every read checks the bytes that remain
// first; a failed read leaves off unchanged and returns a *FormatError that
// names where (the item being decoded).
type decoder struct {
	buf   []byte
	off   int
	where string // what is being decoded, for error messages
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

func (d *decoder) errorf(sentinel error, format string, args ...any) error {
	return &FormatError{Where: d.where, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// take returns the next n bytes (a slice of buf, not a copy).
func (d *decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, d.errorf(ErrTruncated, "%s: need %d bytes at offset %d, file has %d", what, n, d.off, len(d.buf))
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 element count and checks that count elements of at
// least minSize bytes each fit in what remains, so the caller may allocate
// count elements.
func (d *decoder) count(what string, minSize int) (int, error) {
	start := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(d.remaining()/minSize) {
		d.off = start
		return 0, d.errorf(ErrTruncated, "%s %d needs at least %d bytes each, only %d bytes remain", what, n, minSize, d.remaining()-8)
	}
	return int(n), nil
}

// str reads a GGUF string: uint64 length, then that many bytes (copied).
func (d *decoder) str(what string) (string, error) {
	start := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		d.off = start
		return "", d.errorf(ErrTruncated, "%s length %d runs past end of file (%d bytes remain)", what, n, d.remaining())
	}
	b, _ := d.take(int(n), what)
	return string(b), nil
}

// uniqueName reads the name of a metadata key or a tensor (what, in
// errors), which must be non-empty and not yet in seen, and from then on
// locates errors at kind and the name.
func (d *decoder) uniqueName(what, kind string, seen map[string]int) (string, error) {
	name, err := d.str(what)
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", d.errorf(ErrInvalid, "empty %s", what)
	}
	d.where = fmt.Sprintf("%s %q", kind, name)
	if _, dup := seen[name]; dup {
		return "", d.errorf(ErrDuplicated, "duplicate %s", what)
	}
	return name, nil
}

// alignUp rounds pos up to a multiple of a (a power of two), saturating
// rather than overflowing.
func alignUp(pos int64, a int) int64 {
	m := int64(a) - 1
	if pos > math.MaxInt64-m {
		return math.MaxInt64 &^ m
	}
	return (pos + m) &^ m
}
