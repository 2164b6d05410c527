//go:build amd64 && !noasm

package kernels

// quantISA is one instruction set's assembly for the activation quantizers
// and the gemm32 record writer (quant_amd64.s, quantavx2_amd64.s). Its
// methods have the generic kernels' signatures and contracts: whole blocks
// in assembly, after bounds checks in Go.
type quantISA struct {
	q8_0     func(x *float32, qs *int8, d *float32, nb int)
	q8_1     func(x *float32, qs *int8, d, s *float32, nb int)
	q8K      func(x *float32, qs *int8, d *float32, bsums *int16, nb int)
	records  func(qs *int8, d, s *float32, rec *byte, nb int, bias int32)
	fastBias func(qs *int8, d *float32, rec *byte, nb int, bias int32)
	fastMin  func(qs *int8, d *float32, rec *byte, nb int)
}

var (
	quantAVX512 = &quantISA{quantizeQ8_0AVX512, quantizeQ8_1AVX512, quantizeQ8KAVX512, records32AVX512,
		fastRecordsBiasAVX512, fastRecordsMinAVX512}
	quantAVX2 = &quantISA{quantizeQ8_0AVX2, quantizeQ8_1AVX2, quantizeQ8KAVX2, records32AVX2,
		fastRecordsBiasAVX2, fastRecordsMinAVX2}
)

// FastRecords is writeRecords with recordsBias(bias)'s x, or
// writeRecordsMin's with min.
func (k *quantISA) FastRecords(rec []byte, row *actRow, bias int32, min bool) {
	nb := len(row.d)
	if nb == 0 {
		return
	}
	_, _ = row.qs[nb*32-1], rec[nb*fastRec-1]
	if min {
		k.fastMin(&row.qs[0], &row.d[0], &rec[0], nb)
	} else {
		k.fastBias(&row.qs[0], &row.d[0], &rec[0], nb, bias)
	}
}

// Q8_0 is quantizeQ8_0Generic.
func (k *quantISA) Q8_0(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _ = dst.qs[nb*32-1], dst.d[nb-1]
		k.q8_0(&x[0], &dst.qs[0], &dst.d[0], nb)
	}
}

// Q8_1 is quantizeQ8_1Generic.
func (k *quantISA) Q8_1(dst *actRow, x []float32) {
	if nb := len(x) / 32; nb > 0 {
		_, _, _ = dst.qs[nb*32-1], dst.d[nb-1], dst.s[nb-1]
		k.q8_1(&x[0], &dst.qs[0], &dst.d[0], &dst.s[0], nb)
	}
}

// Q8K is quantizeQ8KGeneric.
func (k *quantISA) Q8K(dst *actRow, x []float32) {
	if nb := len(x) / 256; nb > 0 {
		_, _, _ = dst.qs[nb*256-1], dst.d[nb-1], dst.bsums[nb*16-1]
		k.q8K(&x[0], &dst.qs[0], &dst.d[0], &dst.bsums[0], nb)
	}
}

// Records is records32Go.
func (k *quantISA) Records(rec []byte, row *actRow, bias int32) {
	if nb := len(row.d); nb > 0 {
		_, _ = rec[nb*gemm32Rec-1], row.qs[nb*32-1]
		var s *float32
		if row.s != nil {
			_ = row.s[nb-1]
			s = &row.s[0]
		}
		k.records(&row.qs[0], &row.d[0], s, &rec[0], nb, bias)
	}
}
