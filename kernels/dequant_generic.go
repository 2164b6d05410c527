package kernels

import (
	"fmt"

	"pagoda/gguf"
)

// DequantizeRow writes row r of w, converted to float32, into dst
// (len w.Cols). It is the embedding lookup: one row of a table of any
// supported type, never the whole tensor. It panics if r or dst is out of
// range; w must have passed Validate.
//
// bit-exact contract (ggml's dequantize_row_*, as get_rows runs them): the
// conversion is gguf.Dequantize, which rounds every product separately
// where ggml's compiled code may fuse d·q+m into one FMA. Both give the
// same bits: every product in these formulas is a half-precision scale
// (11 significant bits) times small integers (at most 12 bits together), so
// it is exact in float32 and only the final add rounds, fused or not
// (TestDequantizeFusedSame).
func DequantizeRow(dst []float32, w Weight, r int) {
	if r < 0 || r >= w.Rows || len(dst) != w.Cols {
		panic(fmt.Sprintf("kernels: DequantizeRow row %d of %d into %d of %d columns", r, w.Rows, len(dst), w.Cols))
	}
	rb := w.RowBytes()
	if err := gguf.Dequantize(w.Type, w.row(r, rb), dst); err != nil {
		panic(fmt.Sprintf("kernels: DequantizeRow on a weight that did not pass Validate: %v", err))
	}
}
