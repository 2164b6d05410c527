package kernels

import "fmt"

// MatMul computes dst = x · wᵀ: dst (n, w.Rows), x (n, w.Cols), both row
// major. Each row of x is first converted to w's activation format (see the
// package doc), once, then every dst element is one row-by-row dot product
// in the fixed lane order: dst[t][r] depends only on row r of w and row t of
// x. Work is split by output rows over the pool's workers, and for long
// prefills by activation rows too (the conversion included); w's packed
// copy (Pack), when present, is read instead of w.Data.
//
// It panics if the shapes disagree or w's type is unsupported; w should
// have passed Validate.
//
// It is MatMulN with one product (one pool job, the same tasks).
func (p *Pool) MatMul(dst []float32, w Weight, x []float32, n int) {
	p.MatMulN([]MatMulOut{{Dst: dst, W: w}}, x, n)
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
	for t := range j.tasks() {
		j.run(0, t)
	}
}

// convParallelMin is the number of activation rows from which Pool calls
// convert them on all workers (a phase of their job, see addConvert),
// about four tasks per thread.
const convParallelMin = 16

// newMatmulJob converts x into act and returns the job computing dst (see
// planMatmul).
func newMatmulJob(k *impl, act *actRows, dot func([]byte, *actRow) float32, dst []float32, w Weight, x []float32, n, threads int) matmulJob {
	j := planMatmul(k, act, dot, dst, w, x, n, threads)
	j.convert(0, n)
	j.converted()
	return j
}

// planMatmul lays out act for x and returns the job computing dst once
// x is converted (convert), split into about 16 tasks per thread: blocks
// of output rows (whole groups of four for the 32-element tiled kernels,
// of the fast groups for the fast ones)
// and, for the tiled kernels, of activation rows (see actBlock).
func planMatmul(k *impl, act *actRows, dot func([]byte, *actRow) float32, dst []float32, w Weight, x []float32, n, threads int) matmulJob {
	act.layout(w.actKind(), n, w.Cols)
	g := k.gemmFor(w)
	apt, blocks := 0, 16*threads // activation rows per task, row blocks
	if g != nil {
		apt = g.actBlock(w.Cols)
		// The activation blocks spread the work too: fewer, taller row
		// blocks read each block's records fewer times.
		blocks = max(1, blocks/max(1, (n+apt-1)/apt))
		if n <= len(g.tiles) {
			// One pass over the weights, bound by memory: long runs of
			// rows per task keep each worker's stream going.
			blocks = streamBlocks * threads
		}
	}
	rpt := max(1, (w.Rows+blocks-1)/blocks)
	if g != nil && !g.float {
		block, size := g.recordSize()
		act.rec = grow(act.rec, n*(w.Cols/block*size))
		switch {
		case g.fast != nil:
			// Whole full-width passes: a task of 24 rows on the paired
			// kernels would take one pass of 16 and a half-width one of 8,
			// each as long as a pass of 16 (576×576 and 576×1536 Q4_1 at 32
			// tokens, 2 threads: 5–7 % slower than 32-row tasks).
			step := g.fast.rows
			if g.pairs {
				step *= 2
			}
			rpt = (rpt + step - 1) / step * step
		case !g.kq:
			rpt = (rpt + 3) &^ 3
		}
	}
	return matmulJob{k: k, x: x, dot: dot, gemm: g, dst: dst, w: w, rowBytes: w.RowBytes(), act: act, n: n,
		rowsPerTask: rpt, actsPerTask: apt}
}

// streamBlocks is the row blocks per thread of a product of at most one
// tile of tokens (a decode step of few sequences). Measured on the
// default model's tg128 (2-core Zen 4, alternated): 16 blocks 209, 4
// blocks 218 tok/s; the compute-bound shapes (prefill, decode of 32
// sequences) keep 16, which balance better.
const streamBlocks = 4

// convert converts activation rows [t0, t1) of x into the job's rows and
// records. Disjoint ranges may run concurrently. convertCols and
// colsEpilogue (fused_epilogue.go) convert blocks of columns with the same
// writers: a new record format must be added there too (or left to
// colsEpilogue's fallback, a conversion phase).
func (j *matmulJob) convert(t0, t1 int) {
	j.act.convert(j.k, j.x, t0, t1)
	switch g := j.gemm; {
	case g == nil || g.float: // the kernels read act.f
	case g.kq:
		j.act.recordsKRows(t0, t1)
	case g.fast != nil:
		j.act.fastRecordRows(j.k, g.fast.rec, g.fast.block, t0, t1)
	default:
		j.act.records32Rows(j.k, g.bias, t0, t1)
	}
}

// converted completes the records once every row is converted.
func (j *matmulJob) converted() {
	if g := j.gemm; g != nil && g.sAhead {
		j.act.sAhead(j.n)
	}
}

// actBudget is the size of the activation records a task of the tiled
// kernels reads (about a quarter of a core's L2): the tasks of one
// activation block run one after another, so that the block is fetched
// from memory once and each weight row once per block.
const actBudget = 512 << 10

// actBlock returns how many activation rows of cols columns a task of g
// multiplies: a multiple of the widest tile whose records fit actBudget.
func (g *blockGEMM) actBlock(cols int) int {
	block, size := g.recordSize()
	tile := len(g.tiles)
	return max(1, actBudget/(cols/block*size)/tile) * tile
}

func checkMatMul(k *impl, dst []float32, w Weight, x []float32, n int) func([]byte, *actRow) float32 {
	if int(w.Type) >= numTypes || k.dot[w.Type] == nil {
		panic(fmt.Sprintf("kernels: MatMul on unsupported weight type %v", w.Type))
	}
	if n < 0 || len(dst) != n*w.Rows || len(x) != n*w.Cols || len(w.Data) != w.Rows*w.RowBytes() {
		panic(fmt.Sprintf("kernels: MatMul shapes: dst %d, x %d for n=%d and a %d×%d %v weight of %d bytes",
			len(dst), len(x), n, w.Rows, w.Cols, w.Type, len(w.Data)))
	}
	return k.dotFor(w)
}

// matmulJob: task t computes output rows [r·rowsPerTask, (r+1)·rowsPerTask)
// for the tokens [a·actsPerTask, (a+1)·actsPerTask), r = t mod (row
// blocks), a = t / (row blocks) (every token when actsPerTask is 0).
type matmulJob struct {
	k           *impl
	x           []float32 // (n, w.Cols) the activations before conversion
	convRows    int       // > 0: tasks convert this many activation rows each
	dot         func([]byte, *actRow) float32
	gemm        *blockGEMM // tiled kernel replacing dot, if set
	dst         []float32  // (n, w.Rows)
	w           Weight
	rowBytes    int
	act         *actRows // (n) converted rows of x
	n           int
	rowsPerTask int
	actsPerTask int // activation rows per task, 0 for all n
}

// tasks returns the number of tasks: blocks of rowsPerTask output rows,
// times blocks of actsPerTask activation rows (row blocks vary fastest).
func (j *matmulJob) tasks() int {
	nr := (j.w.Rows + j.rowsPerTask - 1) / j.rowsPerTask
	if j.actsPerTask == 0 || j.n <= j.actsPerTask {
		return nr
	}
	return nr * ((j.n + j.actsPerTask - 1) / j.actsPerTask)
}

func (j *matmulJob) run(_, task int) {
	if j.convRows > 0 {
		t0 := task * j.convRows
		j.convert(t0, min(t0+j.convRows, j.n))
		return
	}
	j.compute(taskGrid(task, j.w.Rows, j.rowsPerTask, j.n, j.actsPerTask))
}

// taskGrid returns the output rows [r0, r1) and tokens [t0, t1) of task
// in a product of rows × n split into blocks of rowsPerTask rows and
// actsPerTask tokens (0: all n), row blocks varying fastest.
func taskGrid(task, rows, rowsPerTask, n, actsPerTask int) (r0, r1, t0, t1 int) {
	nr := (rows + rowsPerTask - 1) / rowsPerTask
	r0 = task % nr * rowsPerTask
	r1 = min(r0+rowsPerTask, rows)
	t0, t1 = 0, n
	if actsPerTask > 0 {
		t0 = task / nr * actsPerTask
		t1 = min(t0+actsPerTask, n)
	}
	return r0, r1, t0, t1
}

// prefetch hints that task's weight rows are read soon (prefetcher); the
// tasks of later token blocks read rows an earlier task read.
func (j *matmulJob) prefetch(task int) int {
	r0, r1, t0, _ := taskGrid(task, j.w.Rows, j.rowsPerTask, j.n, j.actsPerTask)
	if j.convRows > 0 || t0 > 0 {
		return 0
	}
	b := j.weightRows(r0, r1)
	prefetchBytes(b)
	return len(b)
}

// compute computes output rows [r0, r1) of tokens [t0, t1), once the
// activations are converted: each element is the same product whatever
// the ranges (r0 a multiple of the row grouping of planMatmul when the
// kernel reads grouped rows).
func (j *matmulJob) compute(r0, r1, t0, t1 int) {
	if j.gemm != nil {
		j.runGEMM(r0, r1, t0, t1)
		return
	}
	rows := j.w.Rows
	for t := t0; t < t1; t++ {
		a := &j.act.rows[t]
		out := j.dst[t*rows : (t+1)*rows]
		for r := r0; r < r1; r++ {
			out[r] = j.dot(j.w.Data[r*j.rowBytes:(r+1)*j.rowBytes], a)
		}
	}
}
