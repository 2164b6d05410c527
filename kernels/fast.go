package kernels

import "pagoda/gguf"

// Fast arithmetic: the default of the quantized weight types.
//
// The exact arithmetic (each type's typeTraits.dot) reproduces ggml's
// vec_dot kernels bit for bit, lane layout included: eight float32 lanes
// per (row, token), every group of four products converted and fused
// separately. The fast arithmetic does per (row, token), block by block,
// in block order:
//
//	isum = Σ_block q_w·q_a                      exact integer dot (the
//	                                            weight's offset, −8 for
//	                                            Q4_0, folded in exactly)
//	acc  = fma(float(isum), d_w·d_a, acc)       d_w·d_a a float32 product
//	acc  = fma(m_w, s_a, acc)                   types with a minimum only:
//	                                            s_a = d_a·Σq_a (exact)
//
// and returns acc: one conversion and one or two FMAs per block instead of
// eight, no lanes to reduce, so that a SIMD lane can be one weight row (the
// layout of llama.cpp's repacked kernels, ggml_gemm_q4_0_8x8_q8_0 and
// kin, generalized). For Q4_0 it is exactly llama.cpp's repacked
// arithmetic (Repack). The K-quants plug in the same way with their own
// super-block arithmetic.
//
// Batch invariance holds as everywhere in the package: a (row, token)
// result depends only on that row and that token's activations, never on
// the batch size, the tile width, the thread count or the position in the
// batch; every implementation reproduces the generic reference dot bit
// for bit (fast_test.go checks each against it).
//
// # Plugging in a type
//
// A type opts in with a fastTraits record in its typeTraits (types.go):
// the generic reference dot, the activation records its kernels read, and
// the interleaved row-group layout built at load time. An accelerated
// implementation adds a blockGEMM with fast set to the same record in the
// type's accelKernels.fast (accel_amd64.go); without one, MatMul runs the
// reference dot on the rows as stored (and no interleaved copy is made).
// Fast(w) marks a weight for the fast arithmetic at load time.
type fastTraits struct {
	// act is the activation format the records are written from.
	act actKind
	// block is the number of elements of one block of weights and of
	// activation records (32; 256 for the K-quants).
	block int
	// rows is the number of weight rows interleaved in one group; a weight
	// takes the fast arithmetic only when Rows is a multiple.
	rows int
	// groupBlock is the size in bytes of one group-block of the
	// interleaved layout: block b of every row of a group.
	groupBlock int
	// interleave writes one group-block into dst (groupBlock bytes) from
	// block b of each of the group's rows (src[i] is row i's block, as
	// stored in the file).
	interleave func(dst []byte, src [][]byte)
	// dot is the generic reference: one weight row, as stored in the
	// file, times one activation row of kind act, in the order above.
	dot func(w []byte, a *actRow) float32
	// rec is the activation records the accelerated kernels read.
	rec *fastRecords
}

// fastRecords is an activation record format of the fast kernels. Types
// whose records are the same pointer share converted activations in
// MatMulN.
type fastRecords struct {
	size  int                           // bytes per block
	write func(rec []byte, row *actRow) // the records of one converted row
	// blocks32 marks the fastRec formats of the 32-element block types
	// (fast_records.go), which implementations may write with their own
	// kernel (impl.fastRecords): x = −bias·Σqs, or d·Σqs with min.
	blocks32 bool
	bias     int32
	min      bool
}

// Fast returns w marked for the fast arithmetic when its type has one and
// Rows is a multiple of the type's group size, with the interleaved copy
// the accelerated kernels read (as much memory as Data) when the
// implementation in use has them; otherwise w unchanged (then Pack it).
// Call it once, at load time, instead of Pack. Data is left untouched
// (embedding lookups may keep reading it).
func Fast(w Weight) Weight { return fast(def, w) }

// HasFast reports whether weights of type t have a fast arithmetic.
func HasFast(t gguf.Type) bool {
	tr := traitsOf(t)
	return tr != nil && tr.fast != nil
}

func fast(k *impl, w Weight) Weight {
	tr := traitsOf(w.Type)
	if tr == nil || tr.fast == nil || w.Rows%tr.fast.rows != 0 || w.Validate() != nil {
		return w
	}
	w.fast, w.packed, w.repacked = tr.fast, nil, nil
	if k.fast[w.Type] != nil {
		w.repacked = interleaveRows(w)
	}
	return w
}

// Repacked reports whether w is multiplied with the fast arithmetic
// (Fast, or Repack: llama.cpp's repacked Q4_0).
func (w Weight) Repacked() bool { return w.fast != nil }

// actKind returns the format activations are converted to for w.
func (w Weight) actKind() actKind {
	if w.fast != nil {
		return w.fast.act
	}
	return actKindOf(w.Type)
}

// interleaveRows lays out w's rows in groups of w.fast.rows: per group,
// its group-blocks in block order.
func interleaveRows(w Weight) []byte {
	f := w.fast
	nb, rb, size := w.Cols/f.block, w.RowBytes(), w.Type.TypeSize()
	return packGroups(w.Rows/f.rows, nb*f.groupBlock, func(out []byte, g int) {
		src := make([][]byte, f.rows)
		for b := range nb {
			for i := range src {
				src[i] = w.Data[(f.rows*g+i)*rb+b*size:][:size]
			}
			f.interleave(out[b*f.groupBlock:][:f.groupBlock], src)
		}
	})
}

// fastRecordRows writes the fast records of rows [t0, t1) of a into
// a.rec, already sized. Disjoint ranges may run concurrently.
func (a *actRows) fastRecordRows(k *impl, r *fastRecords, block, t0, t1 int) {
	stride := a.cols / block * r.size
	for t := t0; t < t1; t++ {
		k.writeFast(r, a.rec[t*stride:(t+1)*stride], &a.rows[t])
	}
}
