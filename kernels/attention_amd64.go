//go:build amd64 && !noasm

package kernels

// Wrappers of the generated attention kernels (attn_amd64.s). They check
// every cache row they will read, as the generic code's slicing does.

func scoresF16AVX(q []float32, k []uint16, offs []int, scale float32, out []float32) {
	hd := len(q)
	out = out[:len(offs)]
	for _, off := range offs {
		_ = k[off : off+hd]
	}
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
	for p, off := range offs {
		if w[p] != 0 {
			_ = v[off : off+hd]
		}
	}
	if len(offs) > 0 && hd > 0 {
		valuesF16AVX512(&lanes[0], &w[0], &v[0], &offs[0], len(offs), hd)
	}
}
