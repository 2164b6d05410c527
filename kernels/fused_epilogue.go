package kernels

// Epilogue conversion: a task that produces some columns of a product's
// input (a block of hidden units of the SwiGLU rows, one head of the
// attention output) converts them for that product at once, instead of a
// conversion phase converting whole rows after a synchronisation. The
// activation formats are per element (float kinds) or per block (the Q8
// kinds, the gemm32 and fast records), so converting whole blocks of
// columns gives the bytes that converting whole rows gives.

// colsEpilogue reports whether the tasks producing columns of j's input in
// ranges that are multiples of align (or end at the row's end) can convert
// them for j: a per-column or per-block format whose blocks divide align.
// K-quant records (gemmk's, and the fast ones whose 256-element blocks
// align does not hold) and formats it does not know take a conversion phase.
// It must accept only the formats whose writers convertCols calls as
// matmulJob.convert does.
func (j *matmulJob) colsEpilogue(align int) bool {
	if align%j.act.kind.block() != 0 {
		return false
	}
	g := j.gemm
	return g == nil || g.float || !g.kq && (g.fast != nil || g.records32())
}

// records32 reports whether g reads gemm32 records.
func (g *blockGEMM) records32() bool {
	block, size := g.recordSize()
	return !g.float && block == 32 && size == gemm32Rec
}

// convertCols converts columns [c0, c1) of the input rows [t0, t1) of j
// (whole blocks; c1 may be the row's end), with their records, but not
// the records' look-ahead (sAheadCols). sub is the calling worker's
// scratch row view.
func (j *matmulJob) convertCols(sub *actRow, t0, t1, c0, c1 int) {
	a := j.act
	bl := a.kind.block()
	b0, b1 := c0/bl, c1/bl
	for t := t0; t < t1; t++ {
		row := &a.rows[t]
		*sub = actRow{}
		if row.f != nil {
			sub.f = row.f[c0:c1]
		} else {
			sub.qs, sub.d = row.qs[c0:c1], row.d[b0:b1]
			if row.s != nil {
				sub.s = row.s[b0:b1]
			}
			if row.bsums != nil {
				sub.bsums = row.bsums[c0/16 : c1/16]
			}
		}
		j.k.quantize[a.kind](sub, j.x[t*a.cols+c0:t*a.cols+c1])
		g := j.gemm
		if g == nil || g.float {
			continue
		}
		rb, size := g.recordSize()
		rec := a.rec[t*(a.cols/rb)*size:][c0/rb*size : c1/rb*size]
		if g.fast != nil {
			j.k.writeFast(g.fast.rec, rec, sub)
		} else {
			j.k.records(rec, sub, g.bias)
		}
	}
	*sub = actRow{}
}

// sAheadCols writes the look-ahead of the records of columns [c0, c1) (a
// whole number of 32-element blocks) for all n rows, once they are all
// converted (see actRows.sAhead).
func (j *matmulJob) sAheadCols(c0, c1 int) {
	if g := j.gemm; g != nil && g.sAhead {
		j.act.sAheadBlocks(j.n, c0/32, c1/32)
	}
}
