package kernels

import (
	"fmt"
	"math"
	"testing"

	"pagoda/gguf"
)

// fastTypes are the weight types with a fast arithmetic.
func fastTypes() []gguf.Type {
	var ts []gguf.Type
	for t := range gguf.Type(numTypes) {
		if HasFast(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// TestFastExact: on every implementation, a fast-arithmetic matmul of
// every type that has one equals the generic reference dot of every
// (row, token) bit for bit, for row counts that fill, split and pad the
// groups, every tile width and remainder, and 1, 2 and 3 threads (batch
// invariance); nothing is written past dst. -short leaves out the
// widest shape (the race detector slows the reference tenfold).
func TestFastExact(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, typ := range fastTypes() {
			r := newRand(11 + uint64(typ))
			f := weightTypes[typ].fast
			rowCounts := []int{f.rows, 3 * f.rows, 5 * f.rows, 200 / f.rows * f.rows}
			colCounts := []int{f.block, 3 * f.block, min(16*f.block, 2048)}
			if testing.Short() {
				rowCounts, colCounts = rowCounts[:3], colCounts[:2]
			}
			for _, rows := range rowCounts {
				for _, cols := range colCounts {
					w, _ := quantWeight(t, r, typ, rows, cols)
					w = fast(k, w)
					if !w.Repacked() {
						t.Fatalf("%v with %d rows not marked fast", typ, rows)
					}
					if k.fast[typ] != nil && w.repacked == nil {
						t.Fatal("no interleaved copy for the accelerated kernels")
					}
					for _, n := range []int{1, 2, 3, 7, 8, 9, 17, 33} {
						checkFast(t, k, w, r.Uint64(), n)
					}
				}
			}
			// Every bit pattern of the quants, scales of every range.
			for dist, mk := range scaleDists {
				w := fast(k, rawBlocks(r, typ, 16, 8*f.block, 0, mk(r)))
				for _, n := range []int{1, 9} {
					t.Run(dist, func(t *testing.T) { checkFast(t, k, w, r.Uint64(), n) })
				}
			}
		}
	})
}

// checkFast multiplies w with n random activation rows on 1, 2 and 3
// threads and compares every element with the reference dot.
func checkFast(t *testing.T, k *impl, w Weight, seed uint64, n int) {
	t.Helper()
	x := randVec(newRand(seed), n*w.Cols, 1)
	var act actRows
	act.prepare(k, w.actKind(), x, n, w.Cols)
	rb := w.RowBytes()
	want := make([]float32, n*w.Rows)
	for tok := range n {
		for row := range w.Rows {
			want[tok*w.Rows+row] = w.fast.dot(w.Data[row*rb:(row+1)*rb], &act.rows[tok])
		}
	}
	for threads := 1; threads <= 3; threads++ {
		t.Run(fmt.Sprintf("%v/%dx%d/n%d/t%d", w.Type, w.Rows, w.Cols, n, threads), func(t *testing.T) {
			p := newPool(threads, k)
			defer p.Close()
			buf := make([]float32, n*w.Rows+8)
			for i := range buf {
				buf[i] = float32(math.NaN())
			}
			p.MatMul(buf[:n*w.Rows], w, x, n)
			for i, v := range buf[n*w.Rows:] {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("MatMul wrote past dst at %d", i)
				}
			}
			for i, v := range want {
				if got := buf[i]; math.Float32bits(got) != math.Float32bits(v) {
					t.Fatalf("token %d row %d: %v, want %v", i/w.Rows, i%w.Rows, got, v)
				}
			}
		})
	}
}

// TestFastDotAgainstFloat: the fast arithmetic computes the same product
// as the dequantized weights times the dequantized activations, to within
// float32 accumulation error.
func TestFastDotAgainstFloat(t *testing.T) {
	for _, typ := range fastTypes() {
		r := newRand(12)
		const rows, cols = 16, 4096
		w, deq := quantWeight(t, r, typ, rows, cols)
		w = fast(generic, w)
		x := randVec(r, cols, 1)
		var act actRows
		act.prepare(generic, w.actKind(), x, 1, cols)
		a := dequantAct(w.actKind(), &act.rows[0], cols)
		rb := w.RowBytes()
		for row := range rows {
			var ref, mag float64
			for j, av := range a {
				ref += float64(deq[row*cols+j]) * float64(av)
				mag += math.Abs(float64(deq[row*cols+j]) * float64(av))
			}
			got := float64(w.fast.dot(w.Data[row*rb:(row+1)*rb], &act.rows[0]))
			if !closeTo(got, ref, 1e-6*mag) {
				t.Fatalf("%v row %d: %v, want %v (magnitude %v)", typ, row, got, ref, mag)
			}
		}
	}
}

// TestFastOnlyWholeGroups: weights whose row count is not a multiple of
// the group, and types without a fast arithmetic, are left as they are.
func TestFastOnlyWholeGroups(t *testing.T) {
	checkKeptPlain(t, Fast, "marked fast", []typeRows{{gguf.Q4_1, 12}, {gguf.Q8_0, 20}, {gguf.F32, 16}, {gguf.F16, 16}})
}

// typeRows is a weight type and a row count.
type typeRows struct {
	typ  gguf.Type
	rows int
}

// checkKeptPlain checks that convert leaves each case's 64-column weight
// unrepacked, reporting a failure as "<type> with <rows> rows <what>".
func checkKeptPlain(t *testing.T, convert func(Weight) Weight, what string, cases []typeRows) {
	t.Helper()
	r := newRand(13)
	for _, tc := range cases {
		w, _ := quantWeight(t, r, tc.typ, tc.rows, 64)
		if convert(w).Repacked() {
			t.Errorf("%v with %d rows %s", tc.typ, tc.rows, what)
		}
	}
}

// TestQhLanes: qhLanes puts the high bit of every element where the
// kernels look for it.
func TestQhLanes(t *testing.T) {
	r := newRand(15)
	for range 100 {
		qh := r.Uint32()
		l := qhLanes(qh)
		for i := range 8 {
			c, h := i%4, i/4
			var v uint32
			if i <= 4 {
				v = l << (4 - i)
			} else {
				v = l >> (i - 4)
			}
			v &= 0x10101010
			for k := range 4 {
				want := qh >> (16*h + 4*c + k) & 1
				if got := v >> (8*k + 4) & 1; got != want {
					t.Fatalf("qh %#x chunk %d half %d byte %d: %d, want %d", qh, c, h, k, got, want)
				}
			}
		}
	}
}

// TestPlanMatmulWholePasses: on the kernels that take two groups of rows
// per full-width pass, every task but the last holds whole such passes
// (a task of 24 rows would spend a half-width pass on its last 8), and the
// tasks still cover every row once.
func TestPlanMatmulWholePasses(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, typ := range fastTypes() {
			g := k.fast[typ]
			if g == nil || g.fast == nil || g.fast.block != 32 {
				continue
			}
			step := g.fast.rows
			if g.pairs {
				step *= 2
			}
			r := newRand(5)
			for _, rows := range []int{192, 200, 576, 1536} {
				w, _ := quantWeight(t, r, typ, rows, 64)
				w = fast(k, w)
				for _, n := range []int{1, 32, 512} {
					for threads := 1; threads <= 3; threads++ {
						var act actRows
						j := planMatmul(k, &act, k.dotFor(w), make([]float32, n*rows), w, make([]float32, n*64), n, threads)
						if j.rowsPerTask%step != 0 {
							t.Fatalf("%v %d rows, n %d, %d threads: %d rows per task, not whole passes of %d", typ, rows, n, threads, j.rowsPerTask, step)
						}
						covered := 0
						for task := range j.tasks() {
							r0, r1, t0, _ := taskGrid(task, rows, j.rowsPerTask, n, j.actsPerTask)
							if t0 == 0 {
								if r0 != covered {
									t.Fatalf("task %d starts at row %d, want %d", task, r0, covered)
								}
								covered = r1
							}
						}
						if covered != rows {
							t.Fatalf("%v %d rows: tasks cover %d", typ, rows, covered)
						}
					}
				}
			}
		}
	})
}
