//go:build amd64 && !noasm

package kernels

// quantizeQ8_0AVX is quantizeQ8_0Generic on whole blocks in assembly.
func quantizeQ8_0AVX(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _ = dst.qs[nb*32-1], dst.d[nb-1]
		quantizeQ8_0AVX512(&x[0], &dst.qs[0], &dst.d[0], nb)
	}
}

// quantizeQ8_1AVX is quantizeQ8_1Generic on whole blocks in assembly.
func quantizeQ8_1AVX(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _, _ = dst.qs[nb*32-1], dst.d[nb-1], dst.s[nb-1]
		quantizeQ8_1AVX512(&x[0], &dst.qs[0], &dst.d[0], &dst.s[0], nb)
	}
}

// records32AVX is records32Go in assembly.
func records32AVX(rec []byte, row *actRow, bias int32) {
	if nb := len(row.d); nb > 0 {
		_, _ = rec[nb*gemm32Rec-1], row.qs[nb*32-1]
		var s *float32
		if row.s != nil {
			_ = row.s[nb-1]
			s = &row.s[0]
		}
		records32AVX512(&row.qs[0], &row.d[0], s, &rec[0], nb, bias)
	}
}

// quantizeQ8KAVX is quantizeQ8KGeneric on whole blocks in assembly.
func quantizeQ8KAVX(dst *actRow, x []float32) {
	if nb := len(x) / 256; nb > 0 {
		_, _, _ = dst.qs[nb*256-1], dst.d[nb-1], dst.bsums[nb*16-1]
		quantizeQ8KAVX512(&x[0], &dst.qs[0], &dst.d[0], &dst.bsums[0], nb)
	}
}
