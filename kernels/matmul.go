package kernels

import "fmt"

// MatMul computes dst = x · wᵀ: dst (n, w.Rows), x (n, w.Cols), both row
// major. Each row of x is first converted to w's activation format (see the
// package doc), once, then every dst element is one row-by-row dot product
// in the fixed lane order: dst[t][r] depends only on row r of w and row t of
// x. Work is split by output rows over the pool's workers.
//
// It panics if the shapes disagree or w's type is unsupported; w should
// have passed Validate.
func (p *Pool) MatMul(dst []float32, w Weight, x []float32, n int) {
	dot := checkMatMul(p.impl, dst, w, x, n)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mm = newMatmulJob(p.impl, &p.act, dot, dst, w, x, n, p.threads)
	p.run(&p.mm, (w.Rows+p.mm.rowsPerTask-1)/p.mm.rowsPerTask)
	p.mm = matmulJob{}
}

// MatMul is Pool.MatMul on the calling goroutine alone, with scratch
// allocated for the call. Use a Pool on hot paths.
func MatMul(dst []float32, w Weight, x []float32, n int) {
	matMulSerial(def, dst, w, x, n)
}

func matMulSerial(k *impl, dst []float32, w Weight, x []float32, n int) {
	dot := checkMatMul(k, dst, w, x, n)
	var act actRows
	j := newMatmulJob(k, &act, dot, dst, w, x, n, 1)
	for r := 0; r < w.Rows; r += j.rowsPerTask {
		j.run(0, r/j.rowsPerTask)
	}
}

// newMatmulJob converts x into act and returns the job computing dst,
// split into about 16 tasks per thread (whole groups of four rows for the
// tiled kernels).
func newMatmulJob(k *impl, act *actRows, dot func([]byte, *actRow) float32, dst []float32, w Weight, x []float32, n, threads int) matmulJob {
	act.prepare(k, actKindOf(w.Type), x, n, w.Cols)
	g := k.gemm[w.Type]
	rpt := max(1, (w.Rows+16*threads-1)/(16*threads))
	switch {
	case g != nil && g.kq:
		act.recordsK()
	case g != nil:
		act.records32(k, g.bias)
		rpt = (rpt + 3) &^ 3
	}
	return matmulJob{dot: dot, gemm: g, dst: dst, w: w, rowBytes: w.RowBytes(), act: act, n: n, rowsPerTask: rpt}
}

func checkMatMul(k *impl, dst []float32, w Weight, x []float32, n int) func([]byte, *actRow) float32 {
	if int(w.Type) >= numTypes || k.dot[w.Type] == nil {
		panic(fmt.Sprintf("kernels: MatMul on unsupported weight type %v", w.Type))
	}
	if n < 0 || len(dst) != n*w.Rows || len(x) != n*w.Cols || len(w.Data) != w.Rows*w.RowBytes() {
		panic(fmt.Sprintf("kernels: MatMul shapes: dst %d, x %d for n=%d and a %d×%d %v weight of %d bytes",
			len(dst), len(x), n, w.Rows, w.Cols, w.Type, len(w.Data)))
	}
	return k.dot[w.Type]
}

// matmulJob: task t computes output rows [t·rowsPerTask, (t+1)·rowsPerTask)
// for every token.
type matmulJob struct {
	dot         func([]byte, *actRow) float32
	gemm        *blockGEMM // tiled kernel replacing dot, if set
	dst         []float32  // (n, w.Rows)
	w           Weight
	rowBytes    int
	act         *actRows // (n) converted rows of x
	n           int
	rowsPerTask int
}

func (j *matmulJob) run(_, task int) {
	r0 := task * j.rowsPerTask
	r1 := min(r0+j.rowsPerTask, j.w.Rows)
	if j.gemm != nil {
		j.runGEMM(r0, r1)
		return
	}
	rows := j.w.Rows
	for t := range j.n {
		a := &j.act.rows[t]
		out := j.dst[t*rows : (t+1)*rows]
		for r := r0; r < r1; r++ {
			out[r] = j.dot(j.w.Data[r*j.rowBytes:(r+1)*j.rowBytes], a)
		}
	}
}
