package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pagoda/gguf"
	"pagoda/model/synth"
)

// runModelSynth implements `pagoda model synth`: a GGUF model with random
// weights at a real model's shape (--shape) or given dimensions (--dims),
// every matrix of --type (a type, or a llama.cpp mix such as Q4_K_M),
// quantized by pagoda's quantizers or drawn as random blocks (--draw), with
// a real vocabulary copied from --vocab; streamed to --out.
func runModelSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("model synth", stdout)
	var f synthFlags
	fs.StringVar(&f.arch, "arch", "", "family: "+strings.Join(synth.Families(), ", ")+
		" (default: the shape's; with --dims, llama; llama3 is llama with Llama 3.2's RoPE scaling and vocabulary)")
	fs.StringVar(&f.shape, "shape", "", "real model shape: "+strings.Join(synth.Shapes(), ", "))
	fs.StringVar(&f.dims, "dims", "", "dimensions instead of --shape: dim,hidden,layers,heads,kvheads,vocab[,headdim]; the other hyperparameters are --arch's")
	fs.IntVar(&f.layers, "layers", 0, "override the layer count")
	fs.IntVar(&f.context, "context", 0, "override the context length")
	fs.IntVar(&f.window, "window", -1, "override gemma3's or gpt-oss's sliding window (0: every layer global)")
	fs.IntVar(&f.experts, "experts", 0, "override a mixture of experts' expert count (qwen3moe, gpt-oss; with --dims, hidden is each expert's length)")
	fs.IntVar(&f.expertsUsed, "experts-used", 0, "override a mixture of experts' experts per token")
	typ := fs.String("type", "Q4_0", "weight type: "+typeNames()+"; or a llama.cpp mix: "+strings.Join(synth.Mixes(), ", "))
	draw := fs.String("draw", "auto", "how weights are drawn: quantize (normal values quantized: the bytes of the test models), "+
		"direct (random quantized blocks, in parallel: seconds per billion weights), auto (direct from 100M matrix weights)")
	out := fs.String("out", "", "output GGUF file")
	vocab := fs.String("vocab", "", "GGUF file to copy the tokenizer from (default: the shape's or the architecture's; \"none\" for no tokenizer)")
	seed := fs.Uint64("seed", 1, "seed of the random weights")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := f.resolve()
	if err != nil {
		return err
	}
	o := synth.Options{Shape: s, Seed: *seed}
	if o.Type, o.Mix, err = parseWeightType(*typ); err != nil {
		return err
	}
	if o.Draw, err = synth.ParseDraw(*draw); err != nil {
		return usageError{fmt.Errorf("--draw: %w", err)}
	}
	if *out == "" {
		return usageError{errors.New("--out is required")}
	}
	if o.Vocab, err = openVocab(*vocab, s); err != nil {
		return err
	}
	if o.Vocab != nil {
		defer o.Vocab.Close()
	}
	start := time.Now()
	if err := synth.Write(*out, o); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s shape (%s, %d layers), %s weights, %.1f MiB in %.1fs\n", *out, s.Name, s.Arch, s.Layers, cmp.Or(o.Mix, o.Type.String()),
		float64(st.Size())/(1<<20), time.Since(start).Seconds())
	return nil
}

// synthFlags are the flags that choose the shape.
type synthFlags struct {
	arch, shape, dims       string
	layers, context, window int
	experts, expertsUsed    int
}

// resolve builds the shape from --shape or --dims, --arch and the
// overrides.
func (f synthFlags) resolve() (synth.Shape, error) {
	var s synth.Shape
	var err error
	switch {
	case (f.shape == "") == (f.dims == ""):
		return s, usageError{errors.New("give exactly one of --shape and --dims")}
	case f.shape != "":
		s, err = synth.Lookup(f.shape)
	case f.arch != "":
		s, err = synth.ParseArchDims(f.arch, f.dims)
	default:
		s, err = synth.ParseDims(f.dims)
	}
	if err != nil {
		return s, usageError{err}
	}
	if f.shape != "" && f.arch != "" && f.arch != s.Arch {
		// llama and qwen2 differ only by the biases: either shape takes either.
		if !isLlamaLike(f.arch) || !isLlamaLike(s.Arch) {
			return s, usageError{fmt.Errorf("--arch %q: shape %s is %s (only llama and qwen2 shapes switch between those two)", f.arch, f.shape, s.Arch)}
		}
		s.Arch = f.arch
	}
	if f.layers < 0 || f.context < 0 || f.window < -1 {
		return s, usageError{errors.New("--layers, --context and --window must not be negative")}
	}
	if f.layers > 0 {
		s.Layers = f.layers
	}
	if f.context > 0 {
		s.ContextLen = f.context
	}
	if f.window >= 0 {
		if s.Arch != "gemma3" && s.Arch != "gpt-oss" {
			return s, usageError{fmt.Errorf("--window: only gemma3 and gpt-oss have sliding-window layers, not %s", s.Arch)}
		}
		s.SlidingWindow = f.window
	}
	if f.experts != 0 || f.expertsUsed != 0 {
		if !s.MoE() || f.experts < 0 || f.expertsUsed < 0 {
			return s, usageError{fmt.Errorf("--experts, --experts-used: %s has no experts", s.Arch)}
		}
		e, u := cmp.Or(f.experts, s.Experts), cmp.Or(f.expertsUsed, s.ExpertsUsed)
		if f.dims != "" {
			s.SetExperts(e, u) // the feed_forward_length key follows
		} else {
			s.Experts, s.ExpertsUsed = e, u
		}
	}
	if err := s.Validate(); err != nil {
		return s, usageError{err}
	}
	return s, nil
}

func isLlamaLike(arch string) bool { return arch == "llama" || arch == "qwen2" }

// parseWeightType parses a weight type or mix name, case-insensitively.
func parseWeightType(name string) (gguf.Type, string, error) {
	for _, t := range synth.Types() {
		if strings.EqualFold(t.String(), name) {
			return t, "", nil
		}
	}
	for _, m := range synth.Mixes() {
		if strings.EqualFold(m, name) {
			return 0, m, nil
		}
	}
	return 0, "", usageError{fmt.Errorf("--type %q: want one of %s, or a mix: %s", name, typeNames(), strings.Join(synth.Mixes(), ", "))}
}

func typeNames() string {
	var n []string
	for _, t := range synth.Types() {
		n = append(n, t.String())
	}
	return strings.Join(n, ", ")
}

// openVocab opens the vocabulary file: path, or "none", or by default the
// shape's: the default model for SmolLM2, a model at the top of the model
// cache (Gemma 3 270M's, which `pagoda pull gemma3` installs), else
// llama.cpp's ggml-vocab-NAME.gguf in the model cache
// (scripts/fetch-synth-vocab.sh installs the ones make model does not).
func openVocab(path string, s synth.Shape) (*gguf.File, error) {
	hint := "run scripts/fetch-synth-vocab.sh"
	switch {
	case path == "none":
		return nil, nil
	case path == "" && s.Vocab == "":
		return nil, usageError{fmt.Errorf("--vocab is required with --dims for %s (a GGUF file, or none)", s.Arch)}
	case path == "" && s.Vocab == "default":
		path = defaultModelPath()
	case path == "" && strings.HasSuffix(s.Vocab, ".gguf"):
		path = filepath.Join(filepath.Dir(defaultModelPath()), s.Vocab)
		hint = "run pagoda pull " + s.Arch
	case path == "":
		path = filepath.Join(filepath.Dir(defaultModelPath()), "ggml-vocab", "ggml-vocab-"+s.Vocab+".gguf")
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--vocab: %w (pass another GGUF, or %s)", err, hint)
	}
	return f, nil
}
