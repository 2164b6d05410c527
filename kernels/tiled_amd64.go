//go:build amd64 && !noasm

package kernels

import "math"

// The AttnTiled kernels of the AVX-512 and AVX2 implementations
// (tiled_amd64.s, tiledavx2_amd64.s); block conversion of head sizes that
// are not a multiple of 16 stays generic.

var (
	tiledAVX512 = tiledAsm(tiledBlockF16AVX512, tiledScoresAVX512, tiledValuesAVX512, tiledValues2AVX512).
			withF16(tiledF16Asm(tiledScoresF16AVX512, tiledValuesF16AVX512, tiledValues2F16AVX512, tiledValues3F16AVX512, tiledValues4F16AVX512, scoresNAVX512)).
			withQ8(tiledBlockQ8AVX512)
	tiledAVX2 = tiledAsm(tiledBlockF16AVX2, tiledScoresAVX2, tiledValuesAVX2, nil).
			withF16(tiledF16Asm(tiledScoresF16AVX2, tiledValuesF16AVX2, nil, nil, nil, noScoresN)).
			withQ8(tiledBlockQ8AVX2)
)

// tiledAsm wraps one instruction set's generated kernels.
func tiledAsm(block func(dst *float32, src *uint16, offs *int, n, hd int),
	scores func(out, q, kb *float32, hp int, scale float32, n, nb int) float32,
	values func(acc, e, vb *float32, n, hp int),
	values2 func(acc0, acc1, e0, e1, vb *float32, n, hp int)) tiledKernels {
	k := tiledKernels{
		blockF16: func(dst []float32, src []uint16, offs []int, hd int) { tiledBlockWith(block, dst, src, offs, hd) },
		scores: func(out, q, kb []float32, scale float32, n int) float32 {
			return tiledScoresWith(scores, out, q, kb, scale, n)
		},
		values: func(acc, e, vb []float32) { tiledValuesWith(values, acc, e, vb) },
	}
	if values2 != nil {
		k.values2 = func(acc0, acc1, e0, e1, vb []float32) { tiledValues2With(values2, acc0, acc1, e0, e1, vb) }
	}
	return k.withValues2()
}

func tiledBlockWith(asm func(dst *float32, src *uint16, offs *int, n, hd int), dst []float32, src []uint16, offs []int, hd int) {
	if hd%16 != 0 || len(offs) == 0 {
		blockF16Generic(dst, src, offs, hd)
		return
	}
	_ = dst[16*hd-1]
	for _, off := range offs {
		_ = src[off+hd-1] // every row read lies in src
	}
	asm(&dst[0], &src[0], &offs[0], len(offs), hd)
}

func tiledScoresWith(asm func(out, q, kb *float32, hp int, scale float32, n, nb int) float32, out, q, kb []float32, scale float32, n int) float32 {
	hp, nb := len(q), len(out)/16
	if nb == 0 {
		return float32(math.Inf(-1))
	}
	_ = kb[nb*16*hp-1]
	return asm(&out[0], &q[0], &kb[0], hp, scale, min(n, 16*nb), nb)
}

func tiledValuesWith(asm func(acc, e, vb *float32, n, hp int), acc, e, vb []float32) {
	hp := len(acc)
	if len(e) == 0 {
		return
	}
	_ = vb[(len(e)+15)/16*16*hp-1]
	asm(&acc[0], &e[0], &vb[0], len(e), hp)
}

func tiledValues2With(asm func(acc0, acc1, e0, e1, vb *float32, n, hp int), acc0, acc1, e0, e1, vb []float32) {
	hp := len(acc0)
	if len(e0) == 0 {
		return
	}
	_, _ = acc1[hp-1], e1[len(e0)-1]
	_ = vb[(len(e0)+15)/16*16*hp-1]
	asm(&acc0[0], &acc1[0], &e0[0], &e1[0], &vb[0], len(e0), hp)
}

// withQ8 returns k with the block conversion of Q8_0 rows asm.
func (k tiledKernels) withQ8(asm func(dst *float32, src *byte, offs *int, n, hd int)) tiledKernels {
	k.blockQ8 = func(dst []float32, src []byte, offs []int, hd int) {
		if hd%q8Block != 0 || len(offs) == 0 {
			blockQ8Generic(dst, src, offs, hd)
			return
		}
		_ = dst[16*hd-1]
		for _, off := range offs {
			_ = src[q8Offset(off+hd)-1] // every row read lies in src
		}
		asm(&dst[0], &src[0], &offs[0], len(offs), hd)
	}
	return k
}

// withF16 returns k with its kernels on F16 rows in place.
func (k tiledKernels) withF16(f *tiledF16) tiledKernels {
	k.f16 = f
	return k
}

// tiledF16Asm wraps one instruction set's kernels on F16 rows in place;
// valuesN takes the widest kernel of at most its rows (values2, values3,
// values4, each nil where the set has none) and values for the rest.
func tiledF16Asm(scores func(out, q *float32, src *uint16, bases *int, hd int, scale float32, n, nb int) float32,
	values func(acc, e *float32, src *uint16, bases *int, n, hd int),
	values2 func(acc0, acc1, e0, e1 *float32, src *uint16, bases *int, n, hd int),
	values3 func(acc0, acc1, acc2, e0, e1, e2 *float32, src *uint16, bases *int, n, hd int),
	values4 func(acc0, acc1, acc2, acc3, e0, e1, e2, e3 *float32, src *uint16, bases *int, n, hd int),
	scoresN func(rows, hd int) scoresNKernel) *tiledF16 {
	f := &tiledF16{
		scores: func(out, q []float32, src []uint16, bases []int, scale float32, n int) float32 {
			hd, nb := len(q), len(out)/16
			if nb == 0 {
				return float32(math.Inf(-1))
			}
			rowsInSrc(src, bases[:nb], hd)
			return scores(&out[0], &q[0], &src[0], &bases[0], hd, scale, min(n, 16*nb), nb)
		},
		values: func(acc, e []float32, src []uint16, bases []int) {
			if len(e) == 0 {
				return
			}
			rowsInSrc(src, bases[:(len(e)+15)/16], len(acc))
			values(&acc[0], &e[0], &src[0], &bases[0], len(e), len(acc))
		},
	}
	f.scoresN = func(out []float32, ostride int, q []float32, rows int, src []uint16, bases []int, scale float32, n int, mx *[maxF16Rows]float32) bool {
		hd := len(q) / rows
		k := scoresN(rows, hd)
		if k == nil || n <= 0 {
			return false
		}
		nb := (n + 15) / 16
		_ = out[(rows-1)*ostride+16*nb-1]
		rowsInSrc(src, bases[:nb], hd)
		k(&out[0], ostride, &q[0], &src[0], &bases[0], scale, n, nb, &mx[0])
		return true
	}
	f.valuesN = func(g *valueRows, src []uint16, bases []int) {
		n, hd := len(g.e[0]), len(g.acc[0])
		if n == 0 {
			return
		}
		for r := range g.n {
			_, _ = g.acc[r][hd-1], g.e[r][n-1]
		}
		rowsInSrc(src, bases[:(n+15)/16], hd)
		a, e, s, b := &g.acc, &g.e, &src[0], &bases[0]
		for r := 0; r < g.n; {
			switch left := g.n - r; {
			case left >= 4 && values4 != nil:
				values4(&a[r][0], &a[r+1][0], &a[r+2][0], &a[r+3][0], &e[r][0], &e[r+1][0], &e[r+2][0], &e[r+3][0], s, b, n, hd)
				r += 4
			case left >= 3 && values3 != nil:
				values3(&a[r][0], &a[r+1][0], &a[r+2][0], &e[r][0], &e[r+1][0], &e[r+2][0], s, b, n, hd)
				r += 3
			case left >= 2 && values2 != nil:
				values2(&a[r][0], &a[r+1][0], &e[r][0], &e[r+1][0], s, b, n, hd)
				r += 2
			default:
				values(&a[r][0], &e[r][0], s, b, n, hd)
				r++
			}
		}
	}
	return f
}

// rowsInSrc checks that the 16 rows of hd halves of each block lie in src.
func rowsInSrc(src []uint16, bases []int, hd int) {
	for _, b := range bases {
		_ = src[b+16*hd-1]
	}
}

// scoresNKernel is a tiledScoresNF16AVX512xH kernel.
type scoresNKernel func(out *float32, ostride int, q *float32, src *uint16, bases *int, scale float32, n, nb int, mx *float32)

// scoresNAVX512 returns the AVX-512 kernel of rows query rows of hd
// elements, or nil.
func scoresNAVX512(rows, hd int) scoresNKernel {
	if rows < 2 || rows > 4 {
		return nil
	}
	switch hd {
	case 64:
		return scoresNx64[rows-2]
	case 128:
		return scoresNx128[rows-2]
	case 256:
		return scoresNx256[rows-2]
	}
	return nil
}

var (
	scoresNx64  = [3]scoresNKernel{tiledScores2F16AVX512x64, tiledScores3F16AVX512x64, tiledScores4F16AVX512x64}
	scoresNx128 = [3]scoresNKernel{tiledScores2F16AVX512x128, tiledScores3F16AVX512x128, tiledScores4F16AVX512x128}
	scoresNx256 = [3]scoresNKernel{tiledScores2F16AVX512x256, tiledScores3F16AVX512x256, tiledScores4F16AVX512x256}
)

func noScoresN(rows, hd int) scoresNKernel { return nil }
