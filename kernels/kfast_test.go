package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"pagoda/gguf"
)

// kFastDots are the K-quants with their fast generic dot products.
var kFastDots = []struct {
	typ gguf.Type
	dot func([]byte, *actRow) float32
}{
	{gguf.Q2_K, dotQ2KFastGeneric},
	{gguf.Q3_K, dotQ3KFastGeneric},
	{gguf.Q4_K, dotQ4KFastGeneric},
	{gguf.Q5_K, dotQ5KFastGeneric},
	{gguf.Q6_K, dotQ6KFastGeneric},
}

// floatDot returns Σ w·a in float64 and Σ |w·a| for row r of deq.
func floatDot(deq, a []float32, r int) (sum, mag float64) {
	n := len(a)
	for j, av := range a {
		p := float64(deq[r*n+j]) * float64(av)
		sum += p
		mag += math.Abs(p)
	}
	return sum, mag
}

// TestKFastAgainstFloat: the fast arithmetic computes the product of the
// dequantized weights and activations to within float32 accumulation error,
// and agrees with the exact (llama.cpp) arithmetic to the same tolerance.
func TestKFastAgainstFloat(t *testing.T) {
	r := newRand(21)
	const rows, cols = 6, 2048
	for _, tc := range kFastDots {
		t.Run(tc.typ.String(), func(t *testing.T) {
			w, deq := quantWeight(t, r, tc.typ, rows, cols)
			x := randVec(r, cols, 1)
			var act actRows
			act.prepare(generic, actQ8K, x, 1, cols)
			a := dequantAct(actQ8K, &act.rows[0], cols)
			rb := w.RowBytes()
			for row := range rows {
				ref, mag := floatDot(deq, a, row)
				got := float64(tc.dot(w.Data[row*rb:(row+1)*rb], &act.rows[0]))
				if !closeTo(got, ref, 2e-6*mag) {
					t.Fatalf("row %d: %v, want %v (magnitude %v)", row, got, ref, mag)
				}
				exact := float64(generic.dot[tc.typ](w.Data[row*rb:(row+1)*rb], &act.rows[0]))
				if !closeTo(got, exact, 4e-6*mag) {
					t.Fatalf("row %d: fast %v, exact %v (magnitude %v)", row, got, exact, mag)
				}
			}
		})
	}
}

// extremeKBlock returns one super-block of typ whose integer sums are as
// large as the format allows: largest quants and scales (Q2_K, Q4_K, Q5_K:
// unsigned maxima with the largest minimums; Q3_K, Q6_K: the most negative
// quants and scales), d = dmin = 1.
func extremeKBlock(t *testing.T, typ gguf.Type) []byte {
	blk := make([]byte, typ.TypeSize())
	switch typ {
	case gguf.Q2_K, gguf.Q4_K, gguf.Q5_K:
		for i := range blk {
			blk[i] = 0xFF
		}
	case gguf.Q6_K:
		for i := 192; i < 208; i++ {
			blk[i] = 0x80 // scale −128; quants 0 − 32
		}
	case gguf.Q3_K: // all zero: quants 0 − 4, scales 0 − 32
	default:
		t.Fatalf("%v is not a K-quant", typ)
	}
	for _, o := range scaleOffsets(typ) {
		binary.LittleEndian.PutUint16(blk[o:], F32ToF16(1))
	}
	return blk
}

// TestKFastExtremeSums: super-blocks at the bounds of the integer sums
// (extreme weights, activations all ±127 and alternating) give the float64
// product to within one rounding of each super-block term: no int32 sum
// overflows.
func TestKFastExtremeSums(t *testing.T) {
	const nb = 4
	for _, tc := range kFastDots {
		t.Run(tc.typ.String(), func(t *testing.T) {
			blk := extremeKBlock(t, tc.typ)
			var row []byte
			for range nb {
				row = append(row, blk...)
			}
			deq := make([]float32, nb*256)
			if err := gguf.Dequantize(tc.typ, row, deq); err != nil {
				t.Fatal(err)
			}
			for _, pattern := range []func(i int) float32{
				func(int) float32 { return 1 },
				func(int) float32 { return -1 },
				func(i int) float32 { return float32(1 - 2*(i&1)) },
			} {
				x := make([]float32, nb*256)
				for i := range x {
					x[i] = pattern(i)
				}
				var act actRows
				act.prepare(generic, actQ8K, x, 1, len(x))
				a := dequantAct(actQ8K, &act.rows[0], len(x))
				ref, mag := floatDot(deq, a, 0)
				got := float64(tc.dot(row, &act.rows[0]))
				if !closeTo(got, ref, 1e-6*mag) {
					t.Fatalf("x[0]=%v: %v, want %v (magnitude %v)", x[0], got, ref, mag)
				}
			}
		})
	}
}
