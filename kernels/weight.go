package kernels

import (
	"fmt"

	"pagoda/gguf"
)

// Weight is a 2-D weight matrix in its file encoding: Rows output features
// of Cols input features each. Row r occupies bytes
// [r*RowBytes(), (r+1)*RowBytes()) of Data, as GGUF stores a tensor with
// Dims = [Cols, Rows]. Data is typically a slice of the model file's mapping
// and is never written.
type Weight struct {
	Type gguf.Type
	Data []byte
	Rows int
	Cols int
}

// Supported reports whether MatMul and DequantizeRow handle weights of type t.
func Supported(t gguf.Type) bool {
	switch t {
	case gguf.F32, gguf.F16, gguf.BF16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1,
		gguf.Q8_0, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		return true
	}
	return false
}

// RowBytes is the size in bytes of one row. It is only meaningful for a
// weight that passed Validate.
func (w Weight) RowBytes() int {
	return w.Cols / w.Type.BlockSize() * w.Type.TypeSize()
}

// Validate checks that the type is supported, the shape is positive, Cols
// is a whole number of blocks and Data holds exactly Rows rows.
func (w Weight) Validate() error {
	if !Supported(w.Type) {
		return fmt.Errorf("kernels: weight type %v is not supported", w.Type)
	}
	if w.Rows <= 0 || w.Cols <= 0 {
		return fmt.Errorf("kernels: invalid weight shape %d×%d", w.Rows, w.Cols)
	}
	rb, err := w.Type.RowSize(w.Cols)
	if err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	if len(w.Data) != rb*w.Rows {
		return fmt.Errorf("kernels: %v weight %d×%d needs %d bytes, has %d", w.Type, w.Rows, w.Cols, rb*w.Rows, len(w.Data))
	}
	return nil
}

// row returns the bytes of row r.
func (w *Weight) row(r, rowBytes int) []byte {
	return w.Data[r*rowBytes : (r+1)*rowBytes]
}
