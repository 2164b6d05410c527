package llama

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
	"pagoda/model"
)

// tinySpec describes a small random model written with the gguf writer.
type tinySpec struct {
	arch       string
	matType    gguf.Type // type of the 2-D weight matrices
	tied       bool      // no output.weight
	bias       bool      // Q/K/V biases
	layers     int
	dim        int
	heads, kvh int
	hidden     int
	vocab      int
	ctx        int
	extraKV    map[string]any // more metadata, keyed without the arch prefix
	skip       string         // a tensor to leave out
	badShape   string         // a tensor to write with a wrong shape
	dropKey    string         // a metadata key (without the arch prefix) to leave out
}

func defaultTiny() tinySpec {
	return tinySpec{arch: "qwen2", matType: gguf.F32, bias: true, layers: 2, dim: 64, heads: 4, kvh: 2,
		hidden: 96, vocab: 80, ctx: 64}
}

// build writes the model and parses it back.
func (s tinySpec) build(t testing.TB) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	s.metadata(w)
	s.tensors(t, w, rand.New(rand.NewPCG(7, 11)))
	f, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (s tinySpec) metadata(w *gguf.Writer) {
	w.AddKV("general.architecture", s.arch)
	w.AddKV("general.name", "tiny-"+s.arch)
	k := func(key string, v any) {
		if key != s.dropKey {
			w.AddKV(s.arch+"."+key, v)
		}
	}
	k("block_count", uint32(s.layers))
	k("embedding_length", uint32(s.dim))
	k("feed_forward_length", uint32(s.hidden))
	k("attention.head_count", uint32(s.heads))
	k("attention.head_count_kv", uint32(s.kvh))
	k("attention.layer_norm_rms_epsilon", float32(1e-6))
	k("context_length", uint32(s.ctx))
	k("rope.freq_base", float32(1e6))
	for key, v := range s.extraKV {
		k(key, v)
	}
}

// tensors adds random weights: matrices of s.matType with the given
// scale, norm weights near 1 (scale 0), biases.
func (s tinySpec) tensors(t testing.TB, w *gguf.Writer, r *rand.Rand) {
	hd := s.dim / s.heads
	add := func(name string, typ gguf.Type, scale float64, dims ...int) {
		if name == s.skip {
			return
		}
		if name == s.badShape {
			dims = append([]int{dims[0] + 32}, dims[1:]...)
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
			if scale == 0 {
				v[i] = 1 + float32(r.NormFloat64()*0.1)
			}
		}
		data, err := gguf.Quantize(typ, v)
		if err == nil {
			err = w.AddTensor(name, typ, dims, data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", s.matType, 1, s.dim, s.vocab)
	add("output_norm.weight", gguf.F32, 0, s.dim)
	if !s.tied {
		add("output.weight", s.matType, 0.2, s.dim, s.vocab)
	}
	for i := range s.layers {
		n := func(x string) string { return fmt.Sprintf("blk.%d.%s", i, x) }
		add(n("attn_norm.weight"), gguf.F32, 0, s.dim)
		add(n("attn_q.weight"), s.matType, 0.2, s.dim, s.heads*hd)
		add(n("attn_k.weight"), s.matType, 0.2, s.dim, s.kvh*hd)
		add(n("attn_v.weight"), s.matType, 0.2, s.dim, s.kvh*hd)
		if s.bias {
			add(n("attn_q.bias"), gguf.F32, 0.3, s.heads*hd)
			add(n("attn_k.bias"), gguf.F32, 0.3, s.kvh*hd)
			add(n("attn_v.bias"), gguf.F32, 0.3, s.kvh*hd)
		}
		add(n("attn_output.weight"), s.matType, 0.2, s.heads*hd, s.dim)
		add(n("ffn_norm.weight"), gguf.F32, 0, s.dim)
		add(n("ffn_gate.weight"), s.matType, 0.2, s.dim, s.hidden)
		add(n("ffn_up.weight"), s.matType, 0.2, s.dim, s.hidden)
		add(n("ffn_down.weight"), s.matType, 0.2, s.hidden, s.dim)
	}
}

// TestQwen2AgainstDense runs a tiny random Qwen2 model (Q/K/V biases, NeoX
// rope, GQA) through the paged, batched Forward and compares every
// position's logits with the dense float64 reference: a prompt in one
// batch, then single decode steps.
func TestQwen2AgainstDense(t *testing.T) {
	cases := []struct {
		name string
		spec func(*tinySpec)
		kv   model.KVType
		tol  float64 // on logits, relative to their largest magnitude
	}{
		{"f32 weights f32 cache", func(*tinySpec) {}, model.KVF32, 1e-5},
		{"q8_0 tied f16 cache", func(s *tinySpec) { s.matType, s.tied = gguf.Q8_0, true }, model.KVF16, 3e-2},
		{"llama norm rope no bias", func(s *tinySpec) { s.arch, s.bias = "llama", false }, model.KVF32, 1e-5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := defaultTiny()
			tc.spec(&spec)
			f := spec.build(t)
			m, err := New(f, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.Config().Rope.NeoX; got != (spec.arch == "qwen2") {
				t.Fatalf("NeoX rope = %v for %s", got, spec.arch)
			}
			ref, err := NewDense(f, m.Config())
			if err != nil {
				t.Fatal(err)
			}
			kv, err := m.NewKVCache(8, 4, tc.kv)
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int32{3, 17, 42, 5, 79, 0, 23}
			s := &seq{tokens: tokens}
			alloc := &blockAlloc{total: 8}
			for step := range 4 {
				alloc.grow(t, s, len(s.tokens), kv.BlockSize)
				var b model.Batch
				addSeq(&b, s, kv.BlockSize, false)
				for i := range b.Tokens {
					b.LogitIndices = append(b.LogitIndices, int32(i))
				}
				logits := make([]float32, len(b.Tokens)*spec.vocab)
				if err := m.Forward(&b, kv, logits); err != nil {
					t.Fatal(err)
				}
				want := ref.Forward(s.tokens)[s.done:]
				compareLogits(t, step, logits, want, tc.tol)
				s.done = len(s.tokens)
				s.tokens = append(s.tokens, int32(step*7+1))
			}
		})
	}
}

func compareLogits(t *testing.T, step int, got []float32, want [][]float64, tol float64) {
	t.Helper()
	var mx float64
	for _, row := range want {
		for _, v := range row {
			mx = math.Max(mx, math.Abs(v))
		}
	}
	for r, row := range want {
		for i, w := range row {
			if g := float64(got[r*len(row)+i]); math.Abs(g-w) > tol*mx {
				t.Fatalf("step %d row %d logit %d: %v, dense %v (max |logit| %v)", step, r, i, g, w, mx)
			}
		}
	}
}
