//go:build amd64 && !noasm

package kernels

import "fmt"

// Wrappers of the generated attention kernels (attn_amd64.s). They check
// that every cache row they will read lies in the cache, as the generic
// code's slicing does (checkCacheRows).

// checkCacheRows panics unless every row [off, off+hd) of offs lies within a
// slice of n elements: one pass for the bounds, not a slice per row.
func checkCacheRows(offs []int, hd, n int) {
	if len(offs) == 0 {
		return
	}
	lo, hi := offs[0], offs[0]
	for _, off := range offs {
		lo, hi = min(lo, off), max(hi, off)
	}
	if lo < 0 || hi > n-hd {
		panic(fmt.Sprintf("kernels: cache rows [%d, %d) out of range [0, %d)", lo, hi+hd, n))
	}
}

func scoresF16AVX(q []float32, k []uint16, offs []int, scale float32, out []float32) {
	hd := len(q)
	out = out[:len(offs)]
	checkCacheRows(offs, hd, len(k))
	if len(offs) > 0 {
		scoresF16AVX512(&q[0], &k[0], &offs[0], len(offs), hd, scale, &out[0])
	}
}

func roundF16AVX(x []float32, a float32) {
	if len(x) > 0 {
		scaleRoundF16AVX512(&x[0], len(x), a)
	}
}

func valuesF16AVX(lanes, w []float32, v []uint16, offs []int, hd int) {
	w = w[:len(offs)]
	_ = lanes[:64*hd]
	checkCacheRows(offs, hd, len(v)) // every row: the register kernels read all
	if len(offs) == 0 || hd == 0 {
		clear(lanes[:64*hd])
		return
	}
	switch hd {
	case 64: // the lanes in registers, from zero
		valuesF16x4AVX512(&lanes[0], &w[0], &v[0], &offs[0], len(offs))
	case 128:
		valuesF16x8AVX512(&lanes[0], &w[0], &v[0], &offs[0], len(offs))
	default:
		clear(lanes[:64*hd])
		valuesF16AVX512(&lanes[0], &w[0], &v[0], &offs[0], len(offs), hd)
	}
}
