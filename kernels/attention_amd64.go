//go:build amd64 && !noasm

package kernels

// Wrappers of the generated attention kernels (attn_amd64.s). The offsets
// come from attentionJob.offsets, which checked every block id against the
// cache: each row [off, off+hd) lies within k and v.

func scoresF16AVX(q []float32, k []uint16, offs []int, scale float32, out []float32) {
	hd := len(q)
	out = out[:len(offs)]
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
