package nn

import (
	"fmt"

	"pagoda/kernels"
)

// Role is a Linear's part in tensor parallelism (Megatron's split).
type Role int

const (
	// Replicated: every rank holds the whole matrix.
	Replicated Role = iota
	// Column: rank r of n holds rows [r·R/n, (r+1)·R/n) of the output
	// (its heads' queries, keys and values; its hidden units), a view of
	// the file mapping; its bias likewise.
	Column
	// Row: rank r holds columns [r·C/n, (r+1)·C/n) of the input, a heap
	// copy, and computes a partial output that the block stack sums over
	// the ranks (an all-reduce) before the residual add; rank 0 alone
	// keeps the bias, added to its partial output.
	Row
)

// Linear is one weight matrix W (Rows × Cols, y = W·x) with an optional
// bias and its tensor-parallel role. Tensor and Row0 name where W lies in
// the file: rows [Row0, Row0+Rows) of tensor Tensor (a fused tensor such
// as Phi-3's attn_qkv holds several Linears).
type Linear struct {
	W      kernels.Weight
	Bias   []float32 // (Rows) or nil
	Role   Role
	Tensor string
	Row0   int
	whole  bool // W is the whole tensor (its pages may be released)
}

// split replaces W (and Bias) by rank r's shard of n.
func (l *Linear) split(r, n int) error {
	switch l.Role {
	case Column:
		l.W = rowsOf(l.W, r, n)
		if l.Bias != nil {
			k := len(l.Bias) / n
			l.Bias = l.Bias[r*k : (r+1)*k]
		}
	case Row:
		if r != 0 {
			l.Bias = nil // added once to the sum of the partial outputs: by rank 0
		}
		w, err := colsOf(l.W, r, n)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", l.Tensor, err)
		}
		l.W = w
	}
	return nil
}

// pack prepares W for the arithmetic a (see Model.packWeights).
func (l *Linear) pack(a arithmetic) { l.W = packFor(a, l.W) }

// packFor returns w prepared for a: the fast records or llama.cpp's
// repacked layout where the type has them, else the accelerated kernels'
// packed copy (identical results).
func packFor(a arithmetic, w kernels.Weight) kernels.Weight {
	var r kernels.Weight
	switch a {
	case arithFast:
		r = kernels.Fast(w)
	case arithRepack:
		r = kernels.Repack(w)
	}
	if r.Repacked() {
		return r
	}
	return kernels.Pack(w)
}

// rowsOf returns rows [r·R/n, (r+1)·R/n) of w (R divisible by n), a view.
func rowsOf(w kernels.Weight, r, n int) kernels.Weight {
	rb := len(w.Data) / w.Rows
	k := w.Rows / n
	return kernels.Weight{Type: w.Type, Data: w.Data[r*k*rb : (r+1)*k*rb], Rows: k, Cols: w.Cols}
}

// rowRange returns rows [from, to) of w, a view.
func rowRange(w kernels.Weight, from, to int) kernels.Weight {
	rb := len(w.Data) / w.Rows
	return kernels.Weight{Type: w.Type, Data: w.Data[from*rb : to*rb], Rows: to - from, Cols: w.Cols}
}
