//go:build amd64 && !noasm

package kernels

// Wrappers of the generated attention kernels (attn_amd64.s). The offsets
// come from attentionJob.offsets, which checked every block id against the
// cache: each row [off, off+hd) lies within k and v.

func scoresF16AVX(q []float32, k []uint16, offs []int, scale float32, out []float32) {
	scoresWith(scoresF16AVX512, q, k, offs, scale, out)
}

// scoresWith runs a generated scores kernel, AVX-512 or AVX2.
func scoresWith(asm func(q *float32, k *uint16, offs *int, n, hd int, scale float32, out *float32),
	q []float32, k []uint16, offs []int, scale float32, out []float32) {
	hd := len(q)
	out = out[:len(offs)]
	if len(offs) > 0 {
		asm(&q[0], &k[0], &offs[0], len(offs), hd, scale, &out[0])
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

func scoresF16AVX2w(q []float32, k []uint16, offs []int, scale float32, out []float32) {
	scoresWith(scoresF16AVX2, q, k, offs, scale, out)
}

func roundF16AVX2w(x []float32, a float32) {
	n := len(x) &^ 7
	if n > 0 {
		scaleRoundF16AVX2(&x[0], n, a)
	}
	for i := n; i < len(x); i++ {
		x[i] = roundF16(x[i] * a)
	}
}

func valuesF16AVX2w(lanes, w []float32, v []uint16, offs []int, hd int) {
	w = w[:len(offs)]
	lanes = lanes[:64*hd]
	if len(offs) > 0 && hd == 64 { // the lanes in registers, from zero
		valuesF16x8AVX2(&lanes[0], &w[0], &v[0], &offs[0], len(offs))
		return
	}
	clear(lanes)
	if len(offs) == 0 || hd == 0 {
		return
	}
	if hd%8 == 0 {
		valuesF16AVX2(&lanes[0], &w[0], &v[0], &offs[0], len(offs), hd)
		return
	}
	for p, off := range offs {
		if w[p] != 0 {
			axpyF16AVX2w(lanes[p%64*hd:][:hd], w[p], v[off:off+hd])
		}
	}
}

func toF16AVX2w(dst []uint16, x []float32) {
	x = x[:len(dst)]
	n := len(dst) &^ 7
	if n > 0 {
		toF16AVX2(&dst[0], &x[0], n)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = F32ToF16(x[i])
	}
}
