package synth

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"pagoda/gguf"
)

// Options configure Build.
type Options struct {
	Shape Shape
	// Type is the type of every weight matrix, the token embeddings and
	// the output head included; norms, biases and RoPE factors are F32.
	Type gguf.Type
	// Vocab is the file whose tokenizer.* metadata is copied; its token
	// count becomes the vocabulary size. Nil writes no tokenizer (pagoda
	// can still run the model; llama.cpp cannot load it).
	Vocab *gguf.File
	Seed  uint64
	// Workers quantize tensors in parallel; ≤ 0 means GOMAXPROCS.
	Workers int
}

// tensor is one tensor to generate: dims in ggml order (dims[0] is the
// row length), and how its values are drawn.
type tensor struct {
	name string
	dims []int
	std  float64   // normal(0, std) values, for matrices and biases
	fill []float32 // fixed values (norms, RoPE factors), F32
}

func (t tensor) elements() int {
	n := 1
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// fileTypes maps a weight type to llama.cpp's general.file_type.
var fileTypes = map[gguf.Type]uint32{
	gguf.F32: 0, gguf.F16: 1, gguf.Q4_0: 2, gguf.Q4_1: 3, gguf.Q8_0: 7, gguf.Q5_0: 8, gguf.Q5_1: 9,
	gguf.Q2_K: 10, gguf.Q3_K: 12, gguf.Q4_K: 15, gguf.Q5_K: 17, gguf.Q6_K: 18, gguf.BF16: 32,
}

// Types lists the weight types synth writes.
func Types() []gguf.Type {
	return []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0,
		gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}
}

// Build generates the model into a gguf.Writer (all tensor data in
// memory), ready to be written.
func Build(o Options) (*gguf.Writer, error) {
	s := o.Shape
	w := gguf.NewWriter()
	if o.Vocab != nil {
		n, err := copyVocab(w, o.Vocab)
		if err != nil {
			return nil, err
		}
		s.VocabSize = n
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ft, ok := fileTypes[o.Type]
	if !ok {
		return nil, fmt.Errorf("synth: weight type %v is not one of %v", o.Type, Types())
	}
	ts := tensors(s)
	for _, t := range ts {
		if t.fill == nil && len(t.dims) == 2 && t.dims[0]%o.Type.BlockSize() != 0 {
			return nil, fmt.Errorf("synth: %v needs rows of a multiple of %d values; %s has %d", o.Type, o.Type.BlockSize(), t.name, t.dims[0])
		}
	}
	addMetadata(w, s, ft)
	data, err := generate(ts, o)
	if err != nil {
		return nil, err
	}
	for i, t := range ts {
		if err := w.AddTensor(t.name, tensorType(t, o.Type), t.dims, data[i]); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Write builds the model and writes it to path.
func Write(path string, o Options) error {
	w, err := Build(o)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// copyVocab copies the tokenizer metadata of v and returns its token count.
func copyVocab(w *gguf.Writer, v *gguf.File) (int, error) {
	toks, ok := v.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) == 0 {
		return 0, fmt.Errorf("synth: vocabulary file has no tokenizer.ggml.tokens")
	}
	for _, kv := range v.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			w.AddKV(kv.Key, kv.Value)
		}
	}
	return len(toks), nil
}

func addMetadata(w *gguf.Writer, s Shape, fileType uint32) {
	a := s.Arch + "."
	w.AddKV("general.architecture", s.Arch)
	w.AddKV("general.name", s.Name+" (synthetic)")
	w.AddKV("general.file_type", fileType)
	w.AddKV("general.quantization_version", uint32(2))
	w.AddKV(a+"vocab_size", uint32(s.VocabSize))
	w.AddKV(a+"context_length", uint32(s.ContextLen))
	w.AddKV(a+"embedding_length", uint32(s.Dim))
	w.AddKV(a+"block_count", uint32(s.Layers))
	w.AddKV(a+"feed_forward_length", uint32(s.HiddenDim))
	w.AddKV(a+"attention.head_count", uint32(s.Heads))
	w.AddKV(a+"attention.head_count_kv", uint32(s.KVHeads))
	w.AddKV(a+"attention.layer_norm_rms_epsilon", s.RMSEps)
	w.AddKV(a+"rope.freq_base", s.RopeTheta)
	w.AddKV(a+"rope.dimension_count", uint32(s.HeadDim()))
}

// tensors lists the model's tensors in llama.cpp's order and naming.
// Matrices are drawn with std 0.02 (the output projections scaled down by
// √(2·layers)), norms are ones.
func tensors(s Shape) []tensor {
	hd, q, kv := s.HeadDim(), s.Heads*s.HeadDim(), s.KVHeads*s.HeadDim()
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	const std = 0.02
	out := std / math.Sqrt(2*float64(s.Layers))
	ts := []tensor{{name: "token_embd.weight", dims: []int{s.Dim, s.VocabSize}, std: std}}
	if s.Llama3Rope != nil {
		ts = append(ts, tensor{name: "rope_freqs.weight", dims: []int{hd / 2}, fill: s.Llama3Rope.ropeFreqs(hd, s.RopeTheta)})
	}
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tensor{name: p + "attn_norm.weight", dims: []int{s.Dim}, fill: ones(s.Dim)},
			tensor{name: p + "attn_q.weight", dims: []int{s.Dim, q}, std: std},
			tensor{name: p + "attn_k.weight", dims: []int{s.Dim, kv}, std: std},
			tensor{name: p + "attn_v.weight", dims: []int{s.Dim, kv}, std: std})
		if s.Arch == "qwen2" {
			ts = append(ts,
				tensor{name: p + "attn_q.bias", dims: []int{q}, std: std},
				tensor{name: p + "attn_k.bias", dims: []int{kv}, std: std},
				tensor{name: p + "attn_v.bias", dims: []int{kv}, std: std})
		}
		ts = append(ts,
			tensor{name: p + "attn_output.weight", dims: []int{q, s.Dim}, std: out},
			tensor{name: p + "ffn_norm.weight", dims: []int{s.Dim}, fill: ones(s.Dim)},
			tensor{name: p + "ffn_gate.weight", dims: []int{s.Dim, s.HiddenDim}, std: std},
			tensor{name: p + "ffn_up.weight", dims: []int{s.Dim, s.HiddenDim}, std: std},
			tensor{name: p + "ffn_down.weight", dims: []int{s.HiddenDim, s.Dim}, std: out})
	}
	ts = append(ts, tensor{name: "output_norm.weight", dims: []int{s.Dim}, fill: ones(s.Dim)})
	if !s.Tied {
		ts = append(ts, tensor{name: "output.weight", dims: []int{s.Dim, s.VocabSize}, std: std})
	}
	return ts
}

// tensorType is typ for matrices, F32 for everything else.
func tensorType(t tensor, typ gguf.Type) gguf.Type {
	if t.fill != nil || len(t.dims) != 2 {
		return gguf.F32
	}
	return typ
}

// source returns a tensor's float values: its fill, or normal values from
// a generator seeded by the model seed and the tensor name.
func source(t tensor, seed uint64) []float32 {
	if t.fill != nil {
		return t.fill
	}
	h := fnv.New64a()
	h.Write([]byte(t.name))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	v := make([]float32, t.elements())
	for i := range v {
		v[i] = float32(r.NormFloat64() * t.std)
	}
	return v
}

// generate quantizes every tensor's source, o.Workers at a time.
func generate(ts []tensor, o Options) ([][]byte, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	data := make([][]byte, len(ts))
	errs := make([]error, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data[i], errs[i] = gguf.Quantize(tensorType(ts[i], o.Type), source(ts[i], o.Seed))
			}
		}()
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("synth: tensor %s: %w", ts[i].name, err)
		}
	}
	return data, nil
}
