//go:build amd64 && !noasm

package kernels

// AVX2 wrappers of the activation quantizers and records
// (quantavx2_amd64.s), as quant_amd64.go's.

func quantizeQ8_0AVX2w(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _ = dst.qs[nb*32-1], dst.d[nb-1]
		quantizeQ8_0AVX2(&x[0], &dst.qs[0], &dst.d[0], nb)
	}
}

func quantizeQ8_1AVX2w(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _, _ = dst.qs[nb*32-1], dst.d[nb-1], dst.s[nb-1]
		quantizeQ8_1AVX2(&x[0], &dst.qs[0], &dst.d[0], &dst.s[0], nb)
	}
}

func records32AVX2w(rec []byte, row *actRow, bias int32) {
	if nb := len(row.d); nb > 0 {
		_, _ = rec[nb*gemm32Rec-1], row.qs[nb*32-1]
		var s *float32
		if row.s != nil {
			_ = row.s[nb-1]
			s = &row.s[0]
		}
		records32AVX2(&row.qs[0], &row.d[0], s, &rec[0], nb, bias)
	}
}

func quantizeQ8KAVX2w(dst *actRow, x []float32) {
	if nb := len(x) / 256; nb > 0 {
		_, _, _ = dst.qs[nb*256-1], dst.d[nb-1], dst.bsums[nb*16-1]
		quantizeQ8KAVX2(&x[0], &dst.qs[0], &dst.d[0], &dst.bsums[0], nb)
	}
}
