package llama

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/refmath"
	"pagoda/model"
	"pagoda/model/nn"
	"pagoda/model/synth"
)

// Expert parallelism (Options.ExpertParallel) on the mixture-of-experts
// families: each of n in-process ranks holds a contiguous range of every
// layer's experts whole and adds the weighted sum of its own choices into
// the layer's all-reduce. Against one rank this regroups a token's sum
// (Σ over ranks of partial sums in choice order, rather than one sum in
// choice order), another rounding, like the Megatron split's: epBound.
//
// epBound is the bound on |logprob(EP, TP=n) − logprob(TP=1)| over the
// whole vocabulary, greedy and teacher-forced; measured (2026-11-27) on
// these models: see TestFamiliesExpertParallel's log.
const epBound = 0.01

// epCases: the families at TP = 2 and 4 (4 KV heads so that 4 ranks
// divide the attention), with expert counts the ranks divide and do not
// (7 experts over 4 ranks: 2, 2, 2, 1; 5 over 2: 3, 2). gpt-oss's experts
// of 64 cannot be split Megatron-style over 4 ranks (16 columns, not a
// 32-element MXFP4 block): only expert parallelism runs it at TP = 4.
var epCases = []struct {
	family, dims string
	window       int
	experts      int // 0: the family's synth default (qwen3moe 16, gpt-oss 8)
	n            int
}{
	{"qwen3moe", "128,256,2,4,2,512", 0, 0, 2},
	{"qwen3moe", "128,256,2,4,4,512", 0, 0, 4},
	{"qwen3moe", "128,256,2,4,4,512", 0, 7, 4},
	{"gpt-oss", "128,64,2,4,2,512", 8, 0, 2},
	{"gpt-oss", "128,64,2,4,4,512", 8, 0, 4},
	{"gpt-oss", "128,64,2,4,2,512", 8, 5, 2},
}

// writeMoE writes a tiny synthetic MoE model with experts experts (0:
// the family's default).
func writeMoE(t *testing.T, family, dims string, window, experts int) string {
	t.Helper()
	shape, err := synth.ParseArchDims(family, dims)
	if err != nil {
		t.Fatal(err)
	}
	if window > 0 {
		shape.SlidingWindow = window
	}
	if experts > 0 {
		shape.SetExperts(experts, shape.ExpertsUsed)
	}
	shape.ContextLen = 512
	return writeSynth(t, synth.Options{Shape: shape, Type: gguf.Q8_0, Seed: 11})
}

// TestFamiliesExpertParallel: qwen3moe and gpt-oss with expert
// parallelism over 2 and 4 in-process ranks decode the same greedy tokens
// as one rank, teacher-forced top-1 agreement and log-probabilities within
// epBound; two micro-batches (DBO) equal one batch bit for bit with EP;
// and each rank holds its experts' bytes only.
func TestFamiliesExpertParallel(t *testing.T) {
	for _, c := range epCases {
		name := fmt.Sprintf("%s/tp%d/experts%d", c.family, c.n, c.experts)
		t.Run(name, func(t *testing.T) {
			path := writeMoE(t, c.family, c.dims, c.window, c.experts)
			opt := Options{Threads: 1}
			one := openModel(t, path, opt)
			opt.ExpertParallel = true
			ep := openTP(t, path, c.n, opt)
			prompts := [][]int32{{1, 2, 3}, {7, 100, 250, 9, 4, 17, 33, 8, 90, 12, 5}}
			worst := 0.0
			for _, p := range prompts {
				kv, err := one.NewKVCache(64, 16, model.KVF32)
				if err != nil {
					t.Fatal(err)
				}
				want, wantLP := greedy(t, one, kv, &blockAlloc{total: 64}, p, 16)
				got, gotLP := tpGreedy(t, ep, p, 16)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("prompt %v step %d: EP at TP=%d token %d, TP=1 %d", p, i, c.n, got[i], want[i])
					}
					worst = math.Max(worst, maxAbs(gotLP[i], wantLP[i]))
				}
			}
			agree, forced, positions := forcedAgreement(t, one, ep)
			t.Logf("EP at TP=%d vs TP=1: greedy %d/%d tokens equal, max |Δ logprob| %.3g; teacher-forced %d/%d top-1 equal, max |Δ logprob| %.3g",
				c.n, 16*len(prompts), 16*len(prompts), worst, agree, positions, forced)
			if tp, err := openTPErr(t, path, c.n, Options{Threads: 1}); err == nil {
				a, d, p := forcedAgreement(t, one, tp)
				t.Logf("without EP (Megatron's split of every expert) at TP=%d vs TP=1: teacher-forced %d/%d top-1 equal, max |Δ logprob| %.3g", c.n, a, p, d)
			}
			if worst = math.Max(worst, forced); worst > epBound {
				t.Errorf("log-probabilities differ by up to %.3g, bound %g", worst, epBound)
			}
			if agree != positions {
				t.Errorf("teacher-forced: %d of %d top-1 tokens agree", agree, positions)
			}
			logShardBytes(t, path, one, ep, c.n)
			checkDBOWith(t, path, c.n, 4, Options{Threads: 2, ExpertParallel: true})
		})
	}
}

func maxAbs(a, b []float64) float64 {
	worst := 0.0
	for j := range a {
		worst = math.Max(worst, math.Abs(a[j]-b[j]))
	}
	return worst
}

// forcedAgreement runs 4 random sequences of 96 tokens, each in one batch, on one
// rank and on the ranks of ms (every position's logits) and returns how
// many positions have the same top-1 token, the largest |Δ logprob| and
// the number of positions.
func forcedAgreement(t *testing.T, one *Model, ms []*Model) (agree int, worst float64, positions int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 5))
	for range 4 {
		tokens := make([]int32, 96)
		for i := range tokens {
			tokens[i] = int32(r.IntN(one.Config().VocabSize))
		}
		want := forcedRows(t, []*Model{one}, tokens)
		got := forcedRows(t, ms, tokens)
		for i := range want {
			if argmax64(want[i]) == argmax64(got[i]) {
				agree++
			}
			worst = math.Max(worst, maxAbs(got[i], want[i]))
		}
		positions += len(want)
	}
	return agree, worst, positions
}

// forcedRows runs tokens as one sequence in one batch on the ranks ms and
// returns rank 0's log-softmax rows of every position.
func forcedRows(t *testing.T, ms []*Model, tokens []int32) [][]float64 {
	t.Helper()
	n := int32(len(tokens))
	b := &model.Batch{Tokens: tokens, QueryStart: []int32{0, n}, ContextLens: []int32{n}, BlockTables: [][]int32{nil}}
	for p := range n {
		b.Positions = append(b.Positions, p)
		b.SlotMapping = append(b.SlotMapping, p)
		b.LogitIndices = append(b.LogitIndices, p)
		if p%16 == 0 {
			b.BlockTables[0] = append(b.BlockTables[0], p/16)
		}
	}
	v := ms[0].Config().VocabSize
	logits := make([]float32, len(tokens)*v)
	errs := make([]error, len(ms))
	onRanks(len(ms), func(r int) {
		kv, err := ms[r].NewKVCache(int(n+15)/16*ms[r].Config().KVLayout().NumGroups(), 16, model.KVF16)
		if err != nil {
			errs[r] = err
			return
		}
		out := logits
		if r > 0 {
			out = make([]float32, len(logits))
		}
		errs[r] = ms[r].Forward(grouped(b, kv), kv, out)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = refmath.LogSoftmax(logits[i*v : (i+1)*v])
	}
	return rows
}

// logShardBytes logs each rank's weight bytes with expert parallelism
// and, where the split divides, with Megatron's; and checks that the
// experts' bytes add up to the whole model's over the EP ranks (every
// expert held once) beside the replicated rest.
func logShardBytes(t *testing.T, path string, one *Model, ep []*Model, n int) {
	t.Helper()
	var epBytes, tpBytes []string
	var sum int64
	for _, m := range ep {
		epBytes = append(epBytes, fmt.Sprint(m.ShardBytes()))
		sum += m.ShardBytes()
	}
	if tp, err := openTPErr(t, path, n, Options{Threads: 1}); err == nil {
		for _, m := range tp {
			tpBytes = append(tpBytes, fmt.Sprint(m.ShardBytes()))
		}
	} else {
		tpBytes = append(tpBytes, "refused: "+err.Error())
	}
	t.Logf("weight bytes: TP=1 %d; per rank with EP %s (sum %d); without EP %s", one.ShardBytes(),
		strings.Join(epBytes, ", "), sum, strings.Join(tpBytes, ", "))
	if sum <= one.ShardBytes() || ep[0].ShardBytes() >= one.ShardBytes() {
		t.Errorf("EP ranks hold %d bytes in all (rank 0 %d), the whole model %d", sum, ep[0].ShardBytes(), one.ShardBytes())
	}
}

// openTPErr is openTP returning the loader's error.
func openTPErr(t *testing.T, path string, n int, opt Options) ([]*Model, error) {
	g := newMemGroup(n)
	var ms []*Model
	for r := range n {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		arch, _ := f.String("general.architecture")
		opt.TensorParallel = memRank{g, r}
		m, err := familyLoaders[arch](f, opt)
		if err != nil {
			f.Close()
			return nil, err
		}
		t.Cleanup(func() { m.Close() })
		ms = append(ms, m)
	}
	return ms, nil
}

// TestExpertRange: vLLM's linear placement, the first ranks one more
// expert when the count does not divide.
func TestExpertRange(t *testing.T) {
	for _, c := range []struct {
		experts, n int
		want       string
	}{
		{16, 2, "[0,8) [8,16)"},
		{7, 4, "[0,2) [2,4) [4,6) [6,7)"},
		{5, 2, "[0,3) [3,5)"},
		{6, 4, "[0,2) [2,4) [4,5) [5,6)"},
		{128, 3, "[0,43) [43,86) [86,128)"},
	} {
		var got []string
		for r := range c.n {
			lo, hi := nn.ExpertRange(c.experts, r, c.n)
			got = append(got, fmt.Sprintf("[%d,%d)", lo, hi))
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%d experts over %d ranks: %s, want %s", c.experts, c.n, s, c.want)
		}
	}
}

// TestExpertParallelRefused: fewer experts than ranks is refused with the
// numbers.
func TestExpertParallelRefused(t *testing.T) {
	shape, err := synth.ParseArchDims("qwen3moe", "128,256,1,4,4,64")
	if err != nil {
		t.Fatal(err)
	}
	shape.SetExperts(2, 2)
	path := writeSynth(t, synth.Options{Shape: shape, Type: gguf.Q8_0, Seed: 1})
	_, err = openTPErr(t, path, 4, Options{ExpertParallel: true})
	if want := "expert parallelism over 4 ranks needs at least 4 experts, not 2"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
