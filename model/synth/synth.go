package synth

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"

	"pagoda/gguf"
)

// Options configure Build and Write.
type Options struct {
	Shape Shape
	// Type is the type of every weight matrix, the token embeddings and
	// the output head included; norms, biases and RoPE factors are F32.
	Type gguf.Type
	// Mix, if set, is one of llama.cpp's K-quant mixes (Mixes: "Q4_K_M",
	// …), which chooses each matrix's type as llama-quantize does (mix.go);
	// Type is then ignored.
	Mix string
	// Vocab is the file whose tokenizer.* metadata is copied; the
	// vocabulary size becomes its token count, or the shape's when that is
	// larger (the tokens then padded). A qwen3 model on Qwen2's BPE
	// vocabulary (ggml-vocab-qwen2.gguf) gets Qwen3's tokenizer instead,
	// built on it (qwen3vocab.go). Nil writes no tokenizer (pagoda can
	// still run the model; llama.cpp cannot load it).
	Vocab *gguf.File
	Seed  uint64
	// Draw is how the matrices' values are drawn (DrawAuto by default).
	Draw Draw
	// Workers make tensors in parallel; ≤ 0 means GOMAXPROCS. The bytes
	// do not depend on it.
	Workers int
}

// Draw is how the weight matrices are drawn.
type Draw int

const (
	// DrawAuto draws directly the models of at least DirectFrom matrix
	// values, and quantizes the smaller ones (every model the tests
	// synthesize, whose bytes their llama.cpp references were made from).
	DrawAuto Draw = iota
	// DrawQuantize draws normal float values from a generator per tensor
	// and quantizes them with gguf.Quantize: slow on large shapes (its
	// K-quant scale search), and the whole tensor in memory at once.
	DrawQuantize
	// DrawDirect draws random quantized blocks (direct.go), in chunks
	// drawn in parallel: what quantizing would give, in distribution, for
	// a fraction of the work (TinyLlama 1.1B Q4_K: 3.6 s of CPU, against
	// 130 s quantized).
	DrawDirect
)

// DirectFrom is the number of matrix values from which DrawAuto draws
// directly: above the test models (the largest, 75M), below the smallest
// real shape (SmolLM2-135M).
const DirectFrom = 100_000_000

var drawNames = []string{DrawAuto: "auto", DrawQuantize: "quantize", DrawDirect: "direct"}

func (d Draw) String() string {
	if d >= 0 && int(d) < len(drawNames) {
		return drawNames[d]
	}
	return fmt.Sprintf("Draw(%d)", int(d))
}

// ParseDraw parses a Draw's name (auto, quantize, direct).
func ParseDraw(name string) (Draw, error) {
	for d, n := range drawNames {
		if strings.EqualFold(n, name) {
			return Draw(d), nil
		}
	}
	return 0, fmt.Errorf("synth: draw %q (want one of %s)", name, strings.Join(drawNames, ", "))
}

// tensor is one tensor to generate: dims in ggml order (dims[0] is the
// row length), and how its values are drawn.
type tensor struct {
	name string
	dims []int
	std  float64   // normal(0, std) values, for matrices and biases
	fill []float32 // fixed values (norms, RoPE factors), F32
	f32  bool      // a matrix kept in F32 (a mixture's router)
	// mxfp4: a matrix always in MXFP4 (gpt-oss's experts, as its
	// converter writes them whatever the output type)
	mxfp4 bool
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
	w, ts, err := plan(o)
	if err != nil {
		return nil, err
	}
	p := startPipeline(ts, o.Seed, workers(o))
	defer p.close()
	for i, t := range ts {
		var b bytes.Buffer
		if err := p.write(i, &b); err != nil {
			return nil, err
		}
		if err := w.AddTensor(t.name, t.typ, t.dims, b.Bytes()); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Write generates the model into the file path, streaming: the tensors'
// data is made on o.Workers goroutines a few pieces ahead of the file.
func Write(path string, o Options) error {
	w, ts, err := plan(o)
	if err != nil {
		return err
	}
	p := startPipeline(ts, o.Seed, workers(o))
	defer p.close()
	for i, t := range ts {
		if err := w.AddTensorFrom(t.name, t.typ, t.dims, func(dst io.Writer) error { return p.write(i, dst) }); err != nil {
			return err
		}
	}
	return w.WriteFile(path)
}

func workers(o Options) int {
	if o.Workers <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Workers
}

// plan validates the options, writes the metadata and lists the tensors
// with their types and how they are drawn.
func plan(o Options) (*gguf.Writer, []planned, error) {
	s := o.Shape
	var vocabTokens int
	if o.Vocab != nil {
		toks, ok := o.Vocab.Strings("tokenizer.ggml.tokens")
		if !ok || len(toks) == 0 {
			return nil, nil, fmt.Errorf("synth: vocabulary file has no tokenizer.ggml.tokens")
		}
		vocabTokens = len(toks)
		s.VocabSize = max(s.VocabSize, vocabTokens)
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	typeOf, ft, err := weightTypes(o, s)
	if err != nil {
		return nil, nil, err
	}
	ts, err := planTensors(tensors(s), typeOf, o.Draw)
	if err != nil {
		return nil, nil, err
	}
	w := gguf.NewWriter()
	addMetadata(w, s, ft)
	switch {
	case o.Vocab != nil && (s.Arch == "qwen3" || s.Arch == "qwen3moe") && isQwen2BPE(o.Vocab):
		if err := addQwen3Tokenizer(w, o.Vocab, s.VocabSize); err != nil {
			return nil, nil, err
		}
	case o.Vocab != nil:
		copyVocab(w, o.Vocab, vocabTokens, s.VocabSize)
	}
	if s.Arch == "bert" && (o.Vocab == nil || !hasKey(o.Vocab, tokenTypeCount)) {
		w.AddKV(tokenTypeCount, uint32(2)) // BERT's two token types (sentence A and B)
	}
	return w, ts, nil
}

// weightTypes returns the type of each weight matrix (o.Type, or o.Mix's
// choice) and general.file_type.
func weightTypes(o Options, s Shape) (func(tensor) gguf.Type, uint32, error) {
	if o.Mix != "" {
		m, err := lookupMix(o.Mix)
		if err != nil {
			return nil, 0, err
		}
		tied := !slices.ContainsFunc(tensors(s), func(t tensor) bool { return t.name == "output.weight" })
		return func(t tensor) gguf.Type { return m.typeOf(t, s, tied) }, m.fileType, nil
	}
	ft, ok := fileTypes[o.Type]
	if !ok {
		return nil, 0, fmt.Errorf("synth: weight type %v is not one of %v", o.Type, Types())
	}
	return func(tensor) gguf.Type { return o.Type }, ft, nil
}

// planTensors gives each tensor its type (typeOf for the matrices) and
// chooses how its values are drawn.
func planTensors(list []tensor, typeOf func(tensor) gguf.Type, draw Draw) ([]planned, error) {
	ts := make([]planned, len(list))
	matrices := 0
	for i, t := range list {
		ts[i] = planned{tensor: t, typ: gguf.F32}
		if isMatrix(t) {
			ts[i].typ = typeOf(t)
			if t.mxfp4 {
				ts[i].typ = gguf.MXFP4
			}
			matrices += t.elements()
		}
		if bs := ts[i].typ.BlockSize(); t.dims[0]%bs != 0 {
			return nil, fmt.Errorf("synth: %v needs rows of a multiple of %d values; %s has %d", ts[i].typ, bs, t.name, t.dims[0])
		}
	}
	if draw == DrawDirect || draw == DrawAuto && matrices >= DirectFrom {
		for i := range ts {
			ts[i].direct = isMatrix(ts[i].tensor)
		}
	}
	return ts, nil
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

// isMatrix reports whether t is a weight matrix (2-D, or a 3-D stack of
// experts) of the weight type: not a norm, a bias, a RoPE factor or a
// matrix kept in F32.
func isMatrix(t tensor) bool { return t.fill == nil && !t.f32 && len(t.dims) >= 2 }

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
