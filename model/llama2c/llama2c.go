// Package llama2c loads checkpoints in llama2.c's legacy ".bin" format and
// presents their weights under GGUF tensor names, so that a llama2.c model
// can be compared with (or run like) its GGUF conversion.
//
// File layout (little-endian):
//
//	header: 7 × int32  dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//	                   vocab_size (negative: an unshared classifier follows),
//	                   seq_len
//	float32 arrays, each row-major (out, in) as in PyTorch:
//	  token_embedding (vocab, dim)
//	  rms_att (layer, dim)
//	  wq (layer, n_heads·head, dim)   wk, wv (layer, n_kv_heads·head, dim)
//	  wo (layer, dim, n_heads·head)
//	  rms_ffn (layer, dim)
//	  w1, w3 (layer, hidden, dim)     w2 (layer, dim, hidden)
//	  rms_final (dim)
//	  freq_cis_real, freq_cis_imag (seq_len, head/2)   unused, skipped
//	  [wcls (vocab, dim)]                              iff vocab_size < 0
//
// Invariants of a Checkpoint returned by Load or Parse: every header field
// is positive (vocab_size after taking its magnitude), dim is a multiple of
// n_heads, n_heads of n_kv_heads, and the head size is even; the file holds
// exactly the arrays above, nothing more (every array was checked against
// the file size before it was read, and the error names the first that runs
// past the end). Tensor data is copied out of the file.
//
// wq and wk are returned exactly as stored. llama2.c rotates interleaved
// pairs (2i, 2i+1) in RoPE, which is also ggml's "normal" RoPE used for the
// llama architecture, so no row permutation is needed — and none was
// applied by the converter that produced stories260K.gguf (the package test
// checks every tensor for bit equality).
package llama2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// Errors wrapped by Load and Parse.
var (
	ErrTruncated   = errors.New("llama2c: file truncated")
	ErrInvalid     = errors.New("llama2c: invalid checkpoint")
	ErrUnsupported = errors.New("llama2c: unsupported checkpoint version")
)

// headerSize is the legacy header: 7 int32.
const headerSize = 7 * 4

// versionMagic starts llama2.c's newer versioned exports ("ak42").
const versionMagic = 0x616b3432

// Config is the checkpoint header.
type Config struct {
	Dim              int // transformer width
	HiddenDim        int // feed-forward width
	NumLayers        int
	NumHeads         int
	NumKVHeads       int
	VocabSize        int  // always positive
	SeqLen           int  // maximum sequence length
	SharedClassifier bool // vocab_size was positive: output.weight is token_embd.weight
}

// HeadDim is Dim / NumHeads.
func (c Config) HeadDim() int { return c.Dim / c.NumHeads }

// Tensor is one weight under its GGUF name.
type Tensor struct {
	Name string
	Dims []int     // ggml order: Dims[0] is the row length (the input dimension)
	Data []float32 // row-major, len = Π Dims
}

// Checkpoint is a loaded llama2.c model.
type Checkpoint struct {
	Config  Config
	Tensors []Tensor // in file order; output.weight only if the classifier is unshared
	index   map[string]int
}

// Tensor returns the named tensor.
func (c *Checkpoint) Tensor(name string) (Tensor, bool) {
	i, ok := c.index[name]
	if !ok {
		return Tensor{}, false
	}
	return c.Tensors[i], true
}

// Load reads a checkpoint file.
func Load(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes a checkpoint held in memory.
func Parse(data []byte) (*Checkpoint, error) {
	cfg, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Config: cfg, index: map[string]int{}}
	off := int64(headerSize)
	for a := range layout(cfg) {
		end := off + 4*a.elems // off <= len(data), a.elems < 2^48: no overflow
		if end > int64(len(data)) {
			return nil, fmt.Errorf("llama2c: tensor %q: data [%d, %d) runs past end of file (size %d): %w", a.name, off, end, len(data), ErrTruncated)
		}
		if !a.skip {
			c.index[a.name] = len(c.Tensors)
			c.Tensors = append(c.Tensors, Tensor{Name: a.name, Dims: a.dims, Data: floats(data[off:end])})
		}
		off = end
	}
	if rest := int64(len(data)) - off; rest != 0 {
		return nil, fmt.Errorf("llama2c: %d bytes after the last array (file size %d, expected %d): %w", rest, len(data), off, ErrInvalid)
	}
	return c, nil
}

// maxField bounds each header field, so that an array's element count (a
// product of at most two fields) cannot overflow.
const maxField = 1 << 24

func parseHeader(data []byte) (Config, error) {
	if len(data) < headerSize {
		return Config{}, fmt.Errorf("llama2c: header needs %d bytes, file has %d: %w", headerSize, len(data), ErrTruncated)
	}
	var h [7]int
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	if uint32(h[0]) == versionMagic {
		return Config{}, fmt.Errorf("llama2c: versioned export (magic \"ak42\", version %d); only the legacy format is supported: %w", h[1], ErrUnsupported)
	}
	cfg := Config{Dim: h[0], HiddenDim: h[1], NumLayers: h[2], NumHeads: h[3], NumKVHeads: h[4],
		VocabSize: h[5], SeqLen: h[6], SharedClassifier: h[5] > 0}
	if cfg.VocabSize < 0 {
		cfg.VocabSize = -cfg.VocabSize
	}
	names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	vals := []int{cfg.Dim, cfg.HiddenDim, cfg.NumLayers, cfg.NumHeads, cfg.NumKVHeads, cfg.VocabSize, cfg.SeqLen}
	for i, v := range vals {
		if v <= 0 || v > maxField {
			return Config{}, fmt.Errorf("llama2c: header %s = %d, want 1 to %d: %w", names[i], h[i], maxField, ErrInvalid)
		}
	}
	switch {
	case cfg.Dim%cfg.NumHeads != 0:
		return Config{}, fmt.Errorf("llama2c: header dim %d is not a multiple of n_heads %d: %w", cfg.Dim, cfg.NumHeads, ErrInvalid)
	case cfg.NumHeads%cfg.NumKVHeads != 0:
		return Config{}, fmt.Errorf("llama2c: header n_heads %d is not a multiple of n_kv_heads %d: %w", cfg.NumHeads, cfg.NumKVHeads, ErrInvalid)
	case cfg.HeadDim()%2 != 0:
		return Config{}, fmt.Errorf("llama2c: head size %d is odd: %w", cfg.HeadDim(), ErrInvalid)
	}
	return cfg, nil
}

// floats decodes little-endian float32s.
func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
