package synth

import (
	"fmt"
	"hash/fnv"
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
	// Vocab is the file whose tokenizer.* metadata is copied; the
	// vocabulary size becomes its token count, or the shape's when that is
	// larger (the tokens then padded). A qwen3 model on Qwen2's BPE
	// vocabulary (ggml-vocab-qwen2.gguf) gets Qwen3's tokenizer instead,
	// built on it (qwen3vocab.go). Nil writes no tokenizer (pagoda can
	// still run the model; llama.cpp cannot load it).
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
	f32  bool      // a matrix kept in F32 (a mixture's router)
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
	var vocabTokens int
	if o.Vocab != nil {
		toks, ok := o.Vocab.Strings("tokenizer.ggml.tokens")
		if !ok || len(toks) == 0 {
			return nil, fmt.Errorf("synth: vocabulary file has no tokenizer.ggml.tokens")
		}
		vocabTokens = len(toks)
		s.VocabSize = max(s.VocabSize, vocabTokens)
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
		if tensorType(t, o.Type) == o.Type && t.dims[0]%o.Type.BlockSize() != 0 {
			return nil, fmt.Errorf("synth: %v needs rows of a multiple of %d values; %s has %d", o.Type, o.Type.BlockSize(), t.name, t.dims[0])
		}
	}
	w := gguf.NewWriter()
	addMetadata(w, s, ft)
	switch {
	case o.Vocab != nil && (s.Arch == "qwen3" || s.Arch == "qwen3moe") && isQwen2BPE(o.Vocab):
		if err := addQwen3Tokenizer(w, o.Vocab, s.VocabSize); err != nil {
			return nil, err
		}
	case o.Vocab != nil:
		copyVocab(w, o.Vocab, vocabTokens, s.VocabSize)
	}
	if s.Arch == "bert" && (o.Vocab == nil || !hasKey(o.Vocab, tokenTypeCount)) {
		w.AddKV(tokenTypeCount, uint32(2)) // BERT's two token types (sentence A and B)
	}
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

// copyVocab copies the tokenizer metadata of v, whose have tokens are
// padded to n with unused "[PADi]" tokens as llama.cpp's converter pads a
// tokenizer to the model's vocab_size (Phi-4-mini's 200064 rows over
// Phi-3's 32064-token vocabulary).
func copyVocab(w *gguf.Writer, v *gguf.File, have, n int) {
	for _, kv := range v.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			w.AddKV(kv.Key, padTokens(kv.Value, have, n))
		}
	}
}

func hasKey(f *gguf.File, key string) bool { _, ok := f.Value(key); return ok }

// tokenTypeCount is the key of BERT's number of token types.
const tokenTypeCount = "tokenizer.ggml.token_type_count"

// tokenUnused is llama.cpp's token type of padding tokens.
const tokenUnused = 5

// padTokens extends a per-token array of have entries to n: tokens with
// "[PADi]", types with unused, scores with -10000 (the converter's). Other
// values (merges, ids, flags) are returned as they are.
func padTokens(val any, have, n int) any {
	if n == have {
		return val
	}
	switch a := val.(type) {
	case []string:
		if len(a) == have {
			out := append(make([]string, 0, n), a...)
			for i := have; i < n; i++ {
				out = append(out, fmt.Sprintf("[PAD%d]", i))
			}
			return out
		}
	case []int32:
		if len(a) == have {
			return padded(a, n, tokenUnused)
		}
	case []float32:
		if len(a) == have {
			return padded(a, n, -10000)
		}
	}
	return val
}

func padded[T any](a []T, n int, fill T) []T {
	out := append(make([]T, 0, n), a...)
	for len(out) < n {
		out = append(out, fill)
	}
	return out
}

// tensorType is typ for matrices (2-D, or 3-D stacks of experts), F32 for
// everything else and the matrices kept in F32.
func tensorType(t tensor, typ gguf.Type) gguf.Type {
	if t.fill != nil || t.f32 || len(t.dims) < 2 {
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
