package llama

import (
	"math"
	"strings"
	"sync"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/model/synth"
)

// memGroup is an in-process model.Reducer for n ranks run as goroutines:
// AllReduce sums the ranks' vectors in rank order (for two ranks a+b,
// which is what MPI's sum gives: float addition commutes).
type memGroup struct {
	n    int
	mu   sync.Mutex
	cond *sync.Cond
	gen  int
	wait int
	bufs [][]float32
}

func newMemGroup(n int) *memGroup {
	g := &memGroup{n: n, bufs: make([][]float32, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// barrier returns once all n ranks reached it.
func (g *memGroup) barrier() {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen
	if g.wait++; g.wait == g.n {
		g.wait, g.gen = 0, g.gen+1
		g.cond.Broadcast()
		return
	}
	for gen == g.gen {
		g.cond.Wait()
	}
}

type memRank struct {
	g    *memGroup
	rank int
}

func (r memRank) Rank() int { return r.rank }
func (r memRank) Size() int { return r.g.n }
func (r memRank) AllReduce(x []float32) error {
	g := r.g
	g.mu.Lock()
	g.bufs[r.rank] = x
	g.mu.Unlock()
	g.barrier()
	sum := make([]float32, len(x))
	for _, b := range g.bufs {
		for i, v := range b {
			sum[i] += v
		}
	}
	g.barrier()
	copy(x, sum)
	return nil
}

// IAllReduce sums at once (every rank starts the same all-reduces in the
// same order, so a blocking start keeps them matched) and returns a done
// request: it checks the arithmetic of the overlapped schedule, the MPI
// tests its concurrency.
func (r memRank) IAllReduce(x []float32) (model.Request, error) {
	return doneRequest{}, r.AllReduce(x)
}

func (r memRank) Progress() error { return nil }

type doneRequest struct{}

func (doneRequest) Wait() error         { return nil }
func (doneRequest) Test() (bool, error) { return true, nil }

// shareToken gives every rank rank 0's token (an all-reduce of it, the
// others contributing 0).
func shareToken(tp model.Reducer, id int32) int32 {
	v := []float32{0}
	if tp.Rank() == 0 {
		v[0] = float32(id)
	}
	tp.AllReduce(v)
	return int32(v[0])
}

// tpGreedy decodes steps tokens after prompt on a model split over
// len(ms) in-process ranks and returns rank 0's ids and log-softmax rows.
func tpGreedy(t *testing.T, ms []*Model, prompt []int32, steps int) ([]int32, [][]float64) {
	t.Helper()
	return tpGreedyKV(t, ms, prompt, steps, model.KVF32)
}

// tpGreedyKV is tpGreedy with a KV cache of type typ.
func tpGreedyKV(t *testing.T, ms []*Model, prompt []int32, steps int, typ model.KVType) ([]int32, [][]float64) {
	t.Helper()
	var ids []int32
	var rows [][]float64
	var wg sync.WaitGroup
	errs := make([]string, len(ms))
	for r, m := range ms {
		wg.Go(func() {
			kv, err := m.NewKVCache(64, 16, typ)
			if err != nil {
				errs[r] = err.Error()
				return
			}
			d := newDecoder(m, kv, &blockAlloc{total: 64}, prompt)
			for range steps {
				lp := d.next(t)
				id := shareToken(m.Reducer(), argmax(lp))
				if r == 0 {
					ids, rows = append(ids, id), append(rows, lp)
				}
				d.push(id)
			}
		})
	}
	wg.Wait()
	if s := strings.Join(errs, ""); s != "" {
		t.Fatal(s)
	}
	return ids, rows
}

// openTP loads path split over n in-process ranks.
func openTP(t *testing.T, path string, n int, opt Options) []*Model {
	g := newMemGroup(n)
	var ms []*Model
	for r := range n {
		opt.TensorParallel = memRank{g, r}
		ms = append(ms, openModel(t, path, opt))
	}
	return ms
}

// checkTP compares greedy decoding split over n ranks with the unsplit
// model: the same tokens, log-probabilities within bound (the split sums
// wo's and down's products in n partial sums, another rounding).
func checkTP(t *testing.T, path string, n int, opt Options, prompts [][]int32, steps int, bound float64) {
	one := openModel(t, path, opt)
	two := openTP(t, path, n, opt)
	if c := two[n-1].LocalConfig(); c.KVHeads*n != one.Config().KVHeads || c.Heads*n != one.Config().Heads {
		t.Fatalf("rank 1 holds %d heads / %d KV heads of %d / %d", c.Heads, c.KVHeads, one.Config().Heads, one.Config().KVHeads)
	}
	worst := 0.0
	for _, p := range prompts {
		kv, err := one.NewKVCache(64, 16, model.KVF32)
		if err != nil {
			t.Fatal(err)
		}
		want, wantLP := greedy(t, one, kv, &blockAlloc{total: 64}, p, steps)
		got, gotLP := tpGreedy(t, two, p, steps)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("prompt %v step %d: TP=%d token %d, TP=1 %d", p, i, n, got[i], want[i])
			}
			for j := range wantLP[i] {
				worst = math.Max(worst, math.Abs(gotLP[i][j]-wantLP[i][j]))
			}
		}
	}
	t.Logf("TP=%d vs TP=1: same %d greedy tokens on %d prompts; largest |logprob difference| over the whole vocabulary %.3g", n, steps, len(prompts), worst)
	if worst > bound {
		t.Fatalf("log-probabilities differ by up to %.3g, bound %g", worst, bound)
	}
}

// tpBound is the largest |logprob(TP=2) − logprob(TP=1)| accepted.
const tpBound = 1e-4

func TestTensorParallelStories(t *testing.T) {
	prompts := [][]int32{{1}, {1, 403, 407, 261}, {1, 320, 281, 300, 262, 409, 312}}
	for _, n := range []int{2, 4} {
		checkTP(t, testmodel.Stories(t), n, Options{Threads: 1}, prompts, 24, tpBound)
	}
}

// TestTensorParallelStories: stories260K (F32; 8 heads, 4 KV heads) split
// over 2 and 4 in-process ranks.
//
// TestTensorParallelQuantized: Q8_0 and Q4_0 weights whose row-parallel
// split (128 and 256 columns over two ranks) falls on 32-element blocks.
func TestTensorParallelQuantized(t *testing.T) {
	shape := tinyShape("tp", 128, 256, 300)
	for _, typ := range []gguf.Type{gguf.Q8_0, gguf.Q4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			path := writeSynth(t, synth.Options{Shape: shape, Type: typ, Seed: 5})
			checkTP(t, path, 2, Options{Threads: 1}, [][]int32{{1, 2, 3}, {7, 100, 250, 9, 4}}, 16, tpBound)
		})
	}
}

// TestTensorParallelRefused: heads that do not divide, and a row-parallel
// split inside a quantization block, are refused with the numbers.
func TestTensorParallelRefused(t *testing.T) {
	cases := []struct {
		shape synth.Shape
		typ   gguf.Type
		want  string
	}{
		{synth.Shape{Dim: 144, HiddenDim: 128, Heads: 9, KVHeads: 3}, gguf.F32,
			"tensor parallelism over 2 ranks needs the query heads (9) and the KV heads (3) to be divisible by 2"},
		{synth.Shape{Dim: 96, HiddenDim: 128, Heads: 6, KVHeads: 2}, gguf.Q8_0,
			"blk.0.attn_output.weight: Q8_0 row-parallel split of 96 columns over 2 ranks gives 48 columns, not a multiple of the 32-element quantization block"},
		{synth.Shape{Dim: 128, HiddenDim: 96, Heads: 4, KVHeads: 2}, gguf.Q8_0,
			"blk.0.ffn_down.weight: Q8_0 row-parallel split of 96 columns over 2 ranks gives 48 columns, not a multiple of the 32-element quantization block"},
	}
	for _, c := range cases {
		s := c.shape
		s.Arch, s.Name, s.Layers, s.VocabSize, s.ContextLen, s.RopeTheta, s.RMSEps = "llama", "x", 1, 64, 64, 10000, 1e-5
		path := writeSynth(t, synth.Options{Shape: s, Type: c.typ, Seed: 1})
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(f, Options{TensorParallel: memRank{newMemGroup(2), 1}})
		f.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: error %v, want %q", c.shape, c.typ, err, c.want)
		}
	}
}
