package engine

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"pagoda/internal/testmodel"
)

// embedReference is testdata/reference/smollm2-135m-instruct-q4_1.embeddings.json:
// llama-server's normalised /v1/embeddings of each case's ids with
// --pooling last and --pooling mean.
type embedReference struct {
	Cases []struct {
		Text string    `json:"text"`
		IDs  []int32   `json:"ids"`
		Last []float64 `json:"last"`
		Mean []float64 `json:"mean"`
	} `json:"cases"`
}

func cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// TestEmbeddingsReference: the default model's pooled embeddings (last and
// mean) agree with llama.cpp's (cosine ≥ 0.99 per input), embedding
// requests run beside a generation request in one engine and leak no block,
// and a repeated last-pooled input served from the prefix cache gives the
// same vector.
func TestEmbeddingsReference(t *testing.T) {
	b, err := os.ReadFile(testmodel.RepoFile(t, "testdata/reference/smollm2-135m-instruct-q4_1.embeddings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref embedReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, testmodel.Default(t), func(c *Config) { c.MaxNumBatchedTokens, c.MaxNumSeqs = 16, 8 }) // chunked prefill
	var reqs []Request
	for _, c := range ref.Cases {
		reqs = append(reqs, Request{PromptTokens: c.IDs, Pooling: PoolLast}, Request{PromptTokens: c.IDs, Pooling: PoolMean})
	}
	reqs = append(reqs, Request{PromptTokens: ref.Cases[0].IDs, Params: GreedyParams(4)})
	outs := runAll(t, e, reqs)
	for i, c := range ref.Cases {
		for j, want := range [][]float64{c.Last, c.Mean} {
			o := outs[2*i+j]
			if len(o.Embedding) != len(want) {
				t.Fatalf("case %d: embedding of %d, want %d", i, len(o.Embedding), len(want))
			}
			if len(o.Outputs) != 1 || len(o.Outputs[0].TokenIDs) != 0 || o.Outputs[0].FinishReason != FinishStop {
				t.Errorf("case %d: outputs %+v, want one finished output without tokens", i, o.Outputs)
			}
			v := append([]float32(nil), o.Embedding...)
			Normalize(v)
			if cs := cosine(v, want); cs < 0.99 {
				t.Errorf("case %d (%q) %s pooling: cosine %.5f with llama.cpp's, want ≥ 0.99", i, c.Text, reqs[2*i+j].Pooling, cs)
			} else {
				t.Logf("case %d %s: cosine %.6f", i, reqs[2*i+j].Pooling, cs)
			}
		}
	}
	if g := outs[len(outs)-1]; len(g.Outputs[0].TokenIDs) != 4 || g.Embedding != nil {
		t.Errorf("the generation request beside them: %+v", g)
	}
	// The same input again: its prefix comes from the cache, its vector is the same.
	again := runAll(t, e, []Request{{PromptTokens: ref.Cases[3].IDs, Pooling: PoolLast}})[0]
	if again.NumCachedTokens == 0 {
		t.Errorf("the repeated input hit no cached prefix")
	}
	for k, v := range again.Embedding {
		if d := math.Abs(float64(v - outs[6].Embedding[k])); d > 1e-5 {
			t.Fatalf("cached repeat differs at %d by %g", k, d)
		}
	}
	if _, err := e.AddRequest(Request{PromptTokens: []int32{1}, Pooling: "max"}); err == nil {
		t.Error("pooling max was accepted")
	}
}
