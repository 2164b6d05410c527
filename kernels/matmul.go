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
	p.act.prepare(p.impl, actKindOf(w.Type), x, n, w.Cols)
	rpt := max(1, (w.Rows+16*p.threads-1)/(16*p.threads))
	p.mm = matmulJob{dot: dot, dst: dst, w: w, rowBytes: w.RowBytes(), act: &p.act, n: n, rowsPerTask: rpt}
	p.run(&p.mm, (w.Rows+rpt-1)/rpt)
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
	act.prepare(k, actKindOf(w.Type), x, n, w.Cols)
	j := matmulJob{dot: dot, dst: dst, w: w, rowBytes: w.RowBytes(), act: &act, n: n, rowsPerTask: w.Rows}
	j.run(0, 0)
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
	dst         []float32 // (n, w.Rows)
	w           Weight
	rowBytes    int
	act         *actRows // (n) converted rows of x
	n           int
	rowsPerTask int
}

func (j *matmulJob) run(_, task int) {
	r0 := task * j.rowsPerTask
	r1 := min(r0+j.rowsPerTask, j.w.Rows)
	rows := j.w.Rows
	for t := range j.n {
		a := &j.act.rows[t]
		out := j.dst[t*rows : (t+1)*rows]
		for r := r0; r < r1; r++ {
			out[r] = j.dot(j.w.Data[r*j.rowBytes:(r+1)*j.rowBytes], a)
		}
	}
}
