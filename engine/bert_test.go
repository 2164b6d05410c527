package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

// synthBERT is the tiny synthetic BERT (128 dims, 256 hidden units, 2
// layers, 4 heads) on BGE's WordPiece vocabulary that llama.cpp made
// testdata/reference/synth-bert-q8_0.embeddings.json from:
//
//	pagoda model synth --arch bert --dims 128,256,2,4,4,1000 --type Q8_0 --out F
//	scripts/make-embeddings-reference.py F testdata/reference/synth-bert-q8_0.embeddings.json mean cls
var synthBERT = struct{ dims, sha256 string }{"128,256,2,4,4,1000", "3839db90cf449879f3087ce5d40a3392ad44353baeb01c847812c81617b8af34"}

type bertReference struct {
	Cases []struct {
		Text string    `json:"text"`
		IDs  []int32   `json:"ids"`
		Mean []float64 `json:"mean"`
		CLS  []float64 `json:"cls"`
	} `json:"cases"`
}

// TestBERTEmbeddingsReference: the synthetic BERT's mean and CLS embeddings
// agree with llama.cpp's (llama-server --embeddings) at cosine ≥ 0.9999 per
// input, in both arithmetics, with the inputs batched together under a
// step budget that would chunk them (an encoder's prompt runs whole); the
// WordPiece ids are llama.cpp's; the file's pooling (CLS) is the default;
// generation and an input over the step budget are refused.
func TestBERTEmbeddingsReference(t *testing.T) {
	path := writeSynthFamily(t, "bert", synthBERT.dims, -1, "bert-bge")
	if got := testmodel.SHA256(t, path); got != synthBERT.sha256 {
		t.Fatalf("synthetic bert sha256 %s, want %s (the reference's model)", got, synthBERT.sha256)
	}
	b, err := os.ReadFile(testmodel.RepoFile(t, "testdata/reference/synth-bert-q8_0.embeddings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref bertReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ref.Cases {
		if got := tk.Encode(c.Text, true, true); fmt.Sprint(got) != fmt.Sprint(c.IDs) {
			t.Errorf("case %d: ids %v, llama.cpp's %v", i, got, c.IDs)
		}
	}
	for _, exact := range []bool{true, false} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			e := newTestEngine(t, path, func(c *Config) {
				c.ExactArithmetic, c.MaxNumBatchedTokens, c.MaxNumSeqs = exact, 64, 8
				c.LongPrefillTokenThreshold = 16
			})
			if e.DefaultPooling() != PoolCLS {
				t.Errorf("default pooling %q, want cls (bert.pooling_type 2)", e.DefaultPooling())
			}
			var reqs []Request
			for _, c := range ref.Cases {
				reqs = append(reqs, Request{PromptTokens: c.IDs, Pooling: PoolMean}, Request{PromptTokens: c.IDs, Pooling: PoolCLS})
			}
			outs := runAll(t, e, reqs)
			worst := 1.0
			for i, c := range ref.Cases {
				for j, want := range [][]float64{c.Mean, c.CLS} {
					v := append([]float32(nil), outs[2*i+j].Embedding...)
					if len(v) != len(want) {
						t.Fatalf("case %d: embedding of %d, want %d", i, len(v), len(want))
					}
					Normalize(v)
					cs := cosine(v, want)
					worst = min(worst, cs)
					if cs < 0.9999 {
						t.Errorf("case %d (%q) %s pooling: cosine %.6f with llama.cpp's, want ≥ 0.9999", i, c.Text, reqs[2*i+j].Pooling, cs)
					}
				}
			}
			if v := append([]float32(nil), outs[1].Embedding...); cosine(v, ref.Cases[0].Mean) > 0.999 {
				t.Errorf("CLS and mean pooling agree: the comparison tells nothing")
			}
			t.Logf("worst cosine %.9f over %d inputs × 2 poolings", worst, len(ref.Cases))
			if _, err := e.AddRequest(Request{PromptTokens: ref.Cases[0].IDs, Params: GreedyParams(4)}); !errors.Is(err, ErrEmbeddingModel) {
				t.Errorf("generation request: err %v, want ErrEmbeddingModel", err)
			}
			long := make([]int32, 65)
			if _, err := e.AddRequest(Request{PromptTokens: long, Pooling: PoolMean}); !errors.Is(err, ErrPromptTooLong) {
				t.Errorf("input over the step budget: err %v, want ErrPromptTooLong", err)
			}
		})
	}
}
