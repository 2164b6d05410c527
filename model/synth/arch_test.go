package synth

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pagoda/gguf"
)

// Tiny shapes of the newer families whose rows suit every block size.
var (
	// tinyQwen3's head size (128) is not dim/heads (64), as on Qwen3.
	tinyQwen3 = Shape{Arch: "qwen3", Name: "tiny", Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2, HeadSize: 128,
		VocabSize: 300, ContextLen: 512, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true}
	tinyGemma3 = Shape{Arch: "gemma3", Name: "tiny", Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 1, HeadSize: 64,
		VocabSize: 300, ContextLen: 512, RopeTheta: 1e6, RopeThetaSWA: 10000, RopeLinear: 8, SlidingWindow: 8, RMSEps: 1e-6, Tied: true}
	// tinyQwen3MoE: 8 experts of 64 hidden units, 2 per token.
	tinyQwen3MoE = Shape{Arch: "qwen3moe", Name: "tiny", Dim: 256, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadSize: 128,
		Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64, VocabSize: 300, ContextLen: 512, RopeTheta: 1e6, RMSEps: 1e-6}
	tinyPhi3 = Shape{Arch: "phi3", Name: "tiny", Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2, RopeDim: 48,
		VocabSize: 300, ContextLen: 512, RopeTheta: 10000, RMSEps: 1e-5, SlidingWindow: 262144, LongRope: longRopeFor(48, 128)}
)

// TestFamilyMetadata: each family writes exactly the keys of its converter
// (conversion/{llama,qwen,gemma,phi}.py), with the shape's values.
func TestFamilyMetadata(t *testing.T) {
	l32, _ := Lookup("llama-3.2-3b")
	l32.Layers = 1
	cases := []struct {
		s    Shape
		want map[string]any
	}{
		{tinyQwen3, map[string]any{"block_count": uint32(2), "context_length": uint32(512), "embedding_length": uint32(256),
			"feed_forward_length": uint32(512), "attention.head_count": uint32(4), "attention.head_count_kv": uint32(2),
			"rope.freq_base": float32(1e6), "attention.layer_norm_rms_epsilon": float32(1e-6),
			"attention.key_length": uint32(128), "attention.value_length": uint32(128)}},
		{tinyQwen3MoE, map[string]any{"block_count": uint32(2), "context_length": uint32(512), "embedding_length": uint32(256),
			"feed_forward_length": uint32(128), "attention.head_count": uint32(4), "attention.head_count_kv": uint32(2),
			"rope.freq_base": float32(1e6), "attention.layer_norm_rms_epsilon": float32(1e-6),
			"attention.key_length": uint32(128), "attention.value_length": uint32(128),
			"expert_count": uint32(8), "expert_used_count": uint32(2), "expert_feed_forward_length": uint32(64)}},
		{tinyGemma3, map[string]any{"block_count": uint32(2), "context_length": uint32(512), "embedding_length": uint32(256),
			"feed_forward_length": uint32(512), "attention.head_count": uint32(4), "attention.head_count_kv": uint32(1),
			"rope.scaling.type": "linear", "rope.scaling.factor": float32(8),
			"rope.freq_base": float32(1e6), "rope.freq_base_swa": float32(10000), "attention.layer_norm_rms_epsilon": float32(1e-6),
			"attention.key_length": uint32(64), "attention.value_length": uint32(64), "attention.sliding_window": uint32(8)}},
		{tinyPhi3, map[string]any{"context_length": uint32(512), "rope.scaling.original_context_length": uint32(128),
			"embedding_length": uint32(256), "feed_forward_length": uint32(512), "block_count": uint32(2),
			"attention.head_count": uint32(4), "attention.head_count_kv": uint32(2), "attention.layer_norm_rms_epsilon": float32(1e-5),
			"rope.dimension_count": uint32(48), "rope.freq_base": float32(10000), "attention.sliding_window": uint32(262144),
			"rope.scaling.attn_factor": float32(math.Sqrt(1 + math.Log(4)/math.Log(128)))}},
		{l32, map[string]any{"vocab_size": uint32(128256), "context_length": uint32(131072), "embedding_length": uint32(3072),
			"block_count": uint32(1), "feed_forward_length": uint32(8192), "attention.head_count": uint32(24),
			"attention.head_count_kv": uint32(8), "attention.layer_norm_rms_epsilon": float32(1e-5), "rope.freq_base": float32(500000),
			"rope.dimension_count": uint32(128), "attention.key_length": uint32(128), "attention.value_length": uint32(128)}},
	}
	for _, c := range cases {
		t.Run(c.s.Arch, func(t *testing.T) {
			w := gguf.NewWriter()
			addMetadata(w, c.s, 7)
			f, err := w.File()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for _, kv := range f.KV {
				if k, ok := strings.CutPrefix(kv.Key, c.s.Arch+"."); ok {
					got[k] = kv.Value
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("metadata\n got %v\nwant %v", got, c.want)
			}
			if a, _ := f.String("general.architecture"); a != c.s.Arch {
				t.Fatalf("architecture %q", a)
			}
		})
	}
}

// TestFamilyTensors: the global tensors and layer 0's, with llama.cpp's
// names and dims (src/models/{qwen3,gemma3,phi3}.cpp).
func TestFamilyTensors(t *testing.T) {
	cases := []struct {
		s        Shape
		global   map[string][]int
		perLayer map[string][]int // blk.0
	}{
		{tinyQwen3, map[string][]int{"token_embd.weight": {256, 300}, "output_norm.weight": {256}},
			map[string][]int{"attn_norm": {256}, "attn_q": {256, 512}, "attn_k": {256, 256}, "attn_v": {256, 256},
				"attn_q_norm": {128}, "attn_k_norm": {128}, "attn_output": {512, 256},
				"ffn_norm": {256}, "ffn_gate": {256, 512}, "ffn_up": {256, 512}, "ffn_down": {512, 256}}},
		{tinyQwen3MoE, map[string][]int{"token_embd.weight": {256, 300}, "output_norm.weight": {256}, "output.weight": {256, 300}},
			map[string][]int{"attn_norm": {256}, "attn_q": {256, 512}, "attn_k": {256, 256}, "attn_v": {256, 256},
				"attn_q_norm": {128}, "attn_k_norm": {128}, "attn_output": {512, 256}, "ffn_norm": {256},
				"ffn_gate_inp": {256, 8}, "ffn_gate_exps": {256, 64, 8}, "ffn_up_exps": {256, 64, 8}, "ffn_down_exps": {64, 256, 8}}},
		{tinyGemma3, map[string][]int{"token_embd.weight": {256, 300}, "output_norm.weight": {256}},
			map[string][]int{"attn_norm": {256}, "attn_q": {256, 256}, "attn_k": {256, 64}, "attn_v": {256, 64},
				"attn_q_norm": {64}, "attn_k_norm": {64}, "attn_output": {256, 256}, "post_attention_norm": {256},
				"ffn_norm": {256}, "ffn_gate": {256, 512}, "ffn_up": {256, 512}, "ffn_down": {512, 256}, "post_ffw_norm": {256}}},
		{tinyPhi3, map[string][]int{"token_embd.weight": {256, 300}, "output_norm.weight": {256}, "output.weight": {256, 300},
			"rope_factors_long.weight": {24}, "rope_factors_short.weight": {24}},
			map[string][]int{"attn_norm": {256}, "attn_qkv": {256, 512}, "attn_output": {256, 256},
				"ffn_norm": {256}, "ffn_up": {256, 1024}, "ffn_down": {512, 256}}},
	}
	for _, c := range cases {
		t.Run(c.s.Arch, func(t *testing.T) {
			want := map[string][]int{}
			for n, d := range c.global {
				want[n] = d
			}
			for l := range c.s.Layers {
				for n, d := range c.perLayer {
					want[fmt.Sprintf("blk.%d.%s.weight", l, n)] = d
				}
			}
			ts := tensors(c.s)
			got := map[string][]int{}
			for _, x := range ts {
				got[x.name] = x.dims
				if x.fill != nil && strings.HasSuffix(x.name, "norm.weight") && slices.ContainsFunc(x.fill, func(v float32) bool { return v != 1 }) {
					t.Fatalf("%s is not ones", x.name)
				}
			}
			if len(got) != len(ts) || !reflect.DeepEqual(got, want) {
				t.Fatalf("tensors\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestDeterministic: the same options give the same bytes; another seed
// other weights.
func TestDeterministic(t *testing.T) {
	write := func(s Shape, seed uint64, workers int) []byte {
		w, err := Build(Options{Shape: s, Type: gguf.Q4_0, Seed: seed, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, s := range []Shape{tinyQwen3, tinyQwen3MoE, tinyGemma3, tinyPhi3} {
		t.Run(s.Arch, func(t *testing.T) {
			a, b, c := write(s, 5, 1), write(s, 5, 3), write(s, 6, 2)
			if !bytes.Equal(a, b) {
				t.Fatal("same seed, different bytes")
			}
			if len(a) != len(c) || bytes.Equal(a, c) {
				t.Fatalf("seeds 5 and 6: %d and %d bytes, equal=%v", len(a), len(c), bytes.Equal(a, c))
			}
		})
	}
}

// TestVocabPadding: a vocabulary smaller than the shape's is padded with
// unused "[PADi]" tokens; per-token arrays grow with it, others do not.
func TestVocabPadding(t *testing.T) {
	v := gguf.NewWriter()
	v.AddKV("general.architecture", "llama")
	v.AddKV("tokenizer.ggml.model", "llama")
	v.AddKV("tokenizer.ggml.tokens", []string{"<unk>", "a", "b"})
	v.AddKV("tokenizer.ggml.scores", []float32{0, -1, -2})
	v.AddKV("tokenizer.ggml.token_type", []int32{2, 1, 1})
	v.AddKV("tokenizer.ggml.merges", []string{"a b"})
	vf, err := v.File()
	if err != nil {
		t.Fatal(err)
	}
	s := tinyPhi3
	s.VocabSize = 5
	f := buildParse(t, Options{Shape: s, Type: gguf.Q8_0, Vocab: vf, Seed: 1})
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	scores, _ := f.Float32s("tokenizer.ggml.scores")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	if !slices.Equal(toks, []string{"<unk>", "a", "b", "[PAD3]", "[PAD4]"}) || !slices.Equal(scores, []float32{0, -1, -2, -10000, -10000}) ||
		!slices.Equal(types, []int32{2, 1, 1, 5, 5}) || len(merges) != 1 {
		t.Fatalf("tokens %q, scores %v, types %v, merges %q", toks, scores, types, merges)
	}
	if info, _ := f.TensorInfo("token_embd.weight"); info.Dims[1] != 5 {
		t.Fatalf("embeddings %v, want 5 rows", info.Dims)
	}
	s.VocabSize = 2 // a larger vocabulary wins
	f = buildParse(t, Options{Shape: s, Type: gguf.Q8_0, Vocab: vf, Seed: 1})
	if info, _ := f.TensorInfo("token_embd.weight"); info.Dims[1] != 3 {
		t.Fatalf("embeddings %v, want 3 rows", info.Dims)
	}
}

// TestLongRope: Phi-4-mini's factors and the converter's attention factor.
func TestLongRope(t *testing.T) {
	s, _ := Lookup("phi-4-mini")
	r := s.LongRope
	if s.RotaryDim() != 96 || len(r.Long) != 48 || len(r.Short) != 48 || r.Long[0] != 1 || r.Long[47] != 47.77 || r.Short[20] != 1 {
		t.Fatalf("rotary %d, factors %v / %v", s.RotaryDim(), r.Long, r.Short)
	}
	if f := r.AttnFactor(131072); math.Abs(float64(f)-1.1902381) > 1e-6 {
		t.Fatalf("attn factor %v, want √(1 + ln 32 / ln 4096) = 1.1902381", f)
	}
	if f := r.AttnFactor(4096); f != 1 {
		t.Fatalf("attn factor %v at the original context, want 1", f)
	}
	g := longRopeFor(24, 4096)
	for i := 1; i < len(g.Long); i++ {
		if g.Long[i] <= g.Long[i-1] || g.Short[i] != 1 {
			t.Fatalf("generated factors %v / %v: want long rising from 1, short ones", g.Long, g.Short)
		}
	}
	if g.Long[0] != 1 || math.Abs(float64(g.Long[11])-40) > 1e-3 {
		t.Fatalf("generated long factors %v: want 1 … 40", g.Long)
	}
}
