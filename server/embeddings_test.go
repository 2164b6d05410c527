package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// /v1/embeddings on the default model: llama.cpp's vectors (last pooling,
// normalised; testdata/reference) for text and token inputs at cosine ≥
// 0.99, base64 the same floats, dimensions cut and renormalised, usage
// counted; /api/embed the same vectors, /api/embeddings not normalised.
func TestEmbeddings(t *testing.T) {
	b, err := os.ReadFile(testmodel.RepoFile(t, "testdata/reference/smollm2-135m-instruct-q4_1.embeddings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Text string    `json:"text"`
			IDs  []int32   `json:"ids"`
			Last []float64 `json:"last"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	ts := newDefaultServer(t, Options{})
	var texts []string
	var ids [][]int32
	tokens := 0
	for _, c := range ref.Cases {
		texts, ids, tokens = append(texts, c.Text), append(ids, c.IDs), tokens+len(c.IDs)
	}
	type resp struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage embeddingUsage `json:"usage"`
	}
	check := func(name string, r resp, b64 bool) [][]float32 {
		t.Helper()
		if r.Object != "list" || len(r.Data) != len(ref.Cases) || r.Usage.PromptTokens != tokens || r.Usage.TotalTokens != tokens {
			t.Fatalf("%s: %+v (usage %+v, want %d tokens)", name, r, r.Usage, tokens)
		}
		var out [][]float32
		for i, d := range r.Data {
			var v []float32
			if b64 {
				var s string
				json.Unmarshal(d.Embedding, &s)
				raw, _ := base64.StdEncoding.DecodeString(s)
				for k := 0; k+4 <= len(raw); k += 4 {
					v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[k:])))
				}
			} else if err := json.Unmarshal(d.Embedding, &v); err != nil {
				t.Fatal(err)
			}
			if d.Index != i || d.Object != "embedding" || len(v) != len(ref.Cases[i].Last) {
				t.Fatalf("%s data[%d]: index %d, %d dimensions", name, i, d.Index, len(v))
			}
			if cs := cosineF(v, ref.Cases[i].Last); cs < 0.99 || math.Abs(norm(v)-1) > 1e-4 {
				t.Errorf("%s input %d: cosine %.5f with llama.cpp's, norm %.5f", name, i, cs, norm(v))
			}
			out = append(out, v)
		}
		return out
	}
	var r resp
	postOK(t, ts.url+"/v1/embeddings", map[string]any{"model": "SmolLM2-135M-Instruct.Q4_1", "input": texts}, &r)
	floats := check("text", r, false)
	postOK(t, ts.url+"/v1/embeddings", map[string]any{"input": ids, "encoding_format": "base64"}, &r)
	for i, v := range check("token ids, base64", r, true) {
		if c := cosineF(v, f64(floats[i])); c < 0.99999 {
			t.Errorf("input %d: token ids and text differ (cosine %g)", i, c)
		}
	}
	postOK(t, ts.url+"/v1/embeddings", map[string]any{"input": texts[0], "dimensions": 64}, &r)
	var cut []float32
	json.Unmarshal(r.Data[0].Embedding, &cut)
	if len(cut) != 64 || math.Abs(norm(cut)-1) > 1e-4 || cosineF(cut, f64(floats[0][:64])) < 0.99999 {
		t.Errorf("dimensions 64: %d values, norm %g", len(cut), norm(cut))
	}
	var oe struct {
		Model      string      `json:"model"`
		Embeddings [][]float32 `json:"embeddings"`
		Count      int         `json:"prompt_eval_count"`
	}
	postOK(t, ts.url+"/api/embed", map[string]any{"model": "SmolLM2-135M-Instruct.Q4_1:latest", "input": texts}, &oe)
	if len(oe.Embeddings) != len(texts) || oe.Count != tokens {
		t.Fatalf("/api/embed: %d embeddings, %d tokens", len(oe.Embeddings), oe.Count)
	}
	for i, v := range oe.Embeddings {
		if c := cosineF(v, f64(floats[i])); c < 0.99999 {
			t.Errorf("/api/embed input %d differs from /v1/embeddings (cosine %g)", i, c)
		}
	}
	var legacy struct {
		Embedding []float32 `json:"embedding"`
	}
	postOK(t, ts.url+"/api/embeddings", map[string]any{"model": "SmolLM2-135M-Instruct.Q4_1", "prompt": texts[1]}, &legacy)
	if cosineF(legacy.Embedding, f64(floats[1])) < 0.99999 || math.Abs(norm(legacy.Embedding)-1) < 1e-3 {
		t.Errorf("/api/embeddings: norm %g (want the raw pooled state)", norm(legacy.Embedding))
	}
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"input": ""}, "must not be empty"},
		{map[string]any{"input": []int32{1 << 30}}, "out of range"},
		{map[string]any{"input": "x", "encoding_format": "int8"}, "encoding_format"},
		{map[string]any{"input": "x", "dimensions": 100000}, "dimensions"},
		{map[string]any{"input": strings.Repeat("word ", 3000)}, "input too long"},
		{map[string]any{}, "input is required"},
	} {
		if status, b := post(t, ts.url+"/v1/embeddings", c.body); status != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%.80v: %d %s, want 400 with %q", c.body, status, b, c.want)
		}
	}
	waitFor(t, 5e9, "the engine to be idle", func() bool { return idle(ts.e) })
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func cosineF(a []float32, b []float64) float64 {
	var ab, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		bb += b[i] * b[i]
	}
	return ab / (norm(a) * math.Sqrt(bb))
}
