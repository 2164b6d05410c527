package qwen3moe

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/model/nn"
	"pagoda/model/qwen3"
	"pagoda/model/synth"
)

// writeMoE writes a tiny synthetic qwen3moe (2 layers, experts of 64
// hidden units, used per token) and returns its path.
func writeMoE(t *testing.T, experts, used int) string {
	t.Helper()
	s, err := synth.ParseArchDims("qwen3moe", "128,64,2,4,2,512")
	if err != nil {
		t.Fatal(err)
	}
	s.SetExperts(experts, used)
	s.ContextLen = 512
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if err := synth.Write(path, synth.Options{Shape: s, Type: gguf.Q8_0, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	return path
}

// patch rewrites in place the bytes of every tensor of the file whose
// name ends in suffix.
func patch(t *testing.T, path, suffix string, edit func(layer string, data []byte)) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		name     string
		off, len int64
	}
	var spans []span
	for _, ti := range f.Tensors {
		if strings.HasSuffix(ti.Name, suffix) {
			spans = append(spans, span{ti.Name, f.DataOffset + ti.Offset, ti.Size})
		}
	}
	f.Close()
	if len(spans) == 0 {
		t.Fatalf("no tensor *%s", suffix)
	}
	out, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, s := range spans {
		b := make([]byte, s.len)
		if _, err := out.ReadAt(b, s.off); err != nil {
			t.Fatal(err)
		}
		edit(s.name, b)
		if _, err := out.WriteAt(b, s.off); err != nil {
			t.Fatal(err)
		}
	}
}

// zeroRouters makes every router logit 0: every expert equally probable,
// so that every token chooses experts 0 … used−1 (ties go to the lower
// id), each with weight 1/used.
func zeroRouters(t *testing.T, path string) {
	patch(t, path, ".ffn_gate_inp.weight", func(_ string, b []byte) { clear(b) })
}

// denseOf writes the qwen3 model whose feed-forward is expert 0 of the
// qwen3moe at path: the same attention, norms and embeddings,
// ffn_gate/up/down the first slice of each expert tensor.
func denseOf(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ff, _ := f.Uint("qwen3moe.expert_feed_forward_length")
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		switch {
		case kv.Key == "general.architecture":
			w.AddKV(kv.Key, "qwen3")
		case strings.HasPrefix(kv.Key, "qwen3moe.expert"):
		case kv.Key == "qwen3moe.feed_forward_length":
			w.AddKV("qwen3.feed_forward_length", uint32(ff))
		case strings.HasPrefix(kv.Key, "qwen3moe."):
			w.AddKV("qwen3."+strings.TrimPrefix(kv.Key, "qwen3moe."), kv.Value)
		default:
			w.AddKV(kv.Key, kv.Value)
		}
	}
	for _, ti := range f.Tensors {
		data, _, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		name, dims := ti.Name, ti.Dims
		switch {
		case strings.HasSuffix(name, ".ffn_gate_inp.weight"):
			continue
		case strings.HasSuffix(name, "_exps.weight"):
			name = strings.Replace(name, "_exps", "", 1)
			data, dims = data[:len(data)/dims[2]], dims[:2]
		}
		if err := w.AddTensor(name, ti.Type, dims, append([]byte(nil), data...)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "dense.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func open(t *testing.T, path string, load func(*gguf.File, nn.Options) (*nn.Model, error), opt nn.Options) *nn.Model {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(f, opt)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// prompts are the sequences the tests prefill, together and alone.
var prompts = [][]int32{
	{1, 17, 42, 99, 7, 3, 250, 11},
	{300, 2, 5},
	{8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26},
}

// prefill runs the sequences as one batch (each in its own blocks of a
// fresh cache) and returns every token's logits.
func prefill(t *testing.T, m *nn.Model, seqs [][]int32) []float32 {
	t.Helper()
	const bs = 16
	kv, err := m.NewKVCache(16, bs, model.KVF32)
	if err != nil {
		t.Fatal(err)
	}
	b := &model.Batch{QueryStart: []int32{0}}
	block := int32(0)
	for _, toks := range seqs {
		var table []int32
		for p := range toks {
			if p%bs == 0 {
				table = append(table, block)
				block++
			}
			b.Tokens = append(b.Tokens, toks[p])
			b.Positions = append(b.Positions, int32(p))
			b.SlotMapping = append(b.SlotMapping, table[p/bs]*bs+int32(p%bs))
			b.LogitIndices = append(b.LogitIndices, int32(len(b.Tokens)-1))
		}
		b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
		b.ContextLens = append(b.ContextLens, int32(len(toks)))
		b.BlockTables = append(b.BlockTables, table)
	}
	g, err := model.SpreadGroups(b, kv)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, len(b.LogitIndices)*m.Config().VocabSize)
	if err := m.Forward(g, kv, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.IsNaN(float64(got[i])) || math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: logit %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// arithmetics are the two arithmetics the tests run.
var arithmetics = map[string]nn.Options{
	"exact": {Threads: 2, ExactArithmetic: true},
	"fast":  {Threads: 2, Attention: kernels.AttnTiled},
}

// TestEveryTokenOnOneExpert: with every router zero and one expert per
// token, every token of a batch goes to expert 0 with weight 1, and the
// model equals, bit for bit, the dense Qwen3 whose feed-forward is that
// expert; each sequence's logits are the same alone as in the batch.
func TestEveryTokenOnOneExpert(t *testing.T) {
	path := writeMoE(t, 8, 1)
	zeroRouters(t, path)
	dense := denseOf(t, path)
	for name, opt := range arithmetics {
		t.Run(name, func(t *testing.T) {
			moe := open(t, path, New, opt)
			got := prefill(t, moe, prompts)
			want := prefill(t, open(t, dense, qwen3.New, opt), prompts)
			sameBits(t, "qwen3moe on one expert vs dense qwen3", got, want)
			row := 0
			vocab := moe.Config().VocabSize
			for _, p := range prompts {
				alone := prefill(t, moe, [][]int32{p})
				sameBits(t, "alone vs batched", alone, got[row*vocab:(row+len(p))*vocab])
				row += len(p)
			}
		})
	}
}

// TestUnusedExpertsNotRead: with every router zero, tokens choose experts
// 0 and 1 only; experts 2 to 7, their Q8_0 block scales made NaN in every
// layer, are never read: the logits stay finite and equal the unpoisoned
// model's bit for bit.
func TestUnusedExpertsNotRead(t *testing.T) {
	const experts, used = 8, 2
	path := writeMoE(t, experts, used)
	zeroRouters(t, path)
	clean := filepath.Join(t.TempDir(), "clean.gguf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clean, data, 0o644); err != nil {
		t.Fatal(err)
	}
	nan := uint16(0x7e00) // an f16 NaN
	patch(t, path, "_exps.weight", func(_ string, b []byte) {
		per := len(b) / experts
		const block = 34 // Q8_0: f16 scale, 32 int8
		for off := used * per; off < len(b); off += block {
			binary.LittleEndian.PutUint16(b[off:], nan)
		}
	})
	for name, opt := range arithmetics {
		t.Run(name, func(t *testing.T) {
			want := prefill(t, open(t, clean, New, opt), prompts)
			got := prefill(t, open(t, path, New, opt), prompts)
			sameBits(t, "poisoned unused experts", got, want)
		})
	}
}

// TestRouteTopK: the routing of llama.cpp's build_moe_ffn for Qwen3-MoE:
// softmax, the largest probabilities first (ties to the lower id), the
// chosen weights renormalised.
func TestRouteTopK(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 0.25, 3}
	e := &nn.MoE{Experts: make([]nn.FFN, 6), K: 3, Gating: nn.GatingSoftmax, NormTopK: true}
	ids, w := make([]int32, 3), make([]float32, 3)
	e.Route(append([]float32(nil), logits...), ids, w, 1)
	if ids[0] != 5 || ids[1] != 1 || ids[2] != 3 {
		t.Fatalf("chose %v, want [5 1 3]", ids)
	}
	var sum float64
	for _, v := range w {
		sum += float64(v)
	}
	if math.Abs(sum-1) > 1e-6 || !(w[0] > w[1]) || w[1] != w[2] {
		t.Fatalf("weights %v (sum %v)", w, sum)
	}
	e.NormTopK = false
	e.Route(append([]float32(nil), logits...), ids, w, 1)
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	for r, id := range ids {
		if p := math.Exp(float64(logits[id])) / z; math.Abs(float64(w[r])-p) > 1e-6 {
			t.Fatalf("unnormalised weight %d = %v, want the probability %v", r, w[r], p)
		}
	}
}

// TestExpertPagesReleased: with the fast arithmetic every expert reads a
// packed copy, so each layer's three expert tensors leave resident memory
// whole at load (their file pages would otherwise stay beside the copies,
// twice the experts' bytes), and the model still computes the same logits
// as one whose file is read again.
func TestExpertPagesReleased(t *testing.T) {
	path := writeMoE(t, 8, 2)
	m := open(t, path, New, arithmetics["fast"])
	var want []string
	for i := range m.Config().Layers {
		for _, n := range []string{"gate", "up", "down"} {
			want = append(want, fmt.Sprintf("blk.%d.ffn_%s_exps.weight", i, n))
		}
	}
	var got []string
	for _, n := range m.Released() {
		if strings.Contains(n, "_exps.") {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("released %q, want %q", got, want)
	}
	sameBits(t, "after the release", prefill(t, m, prompts), prefill(t, open(t, path, New, arithmetics["fast"]), prompts))
}
