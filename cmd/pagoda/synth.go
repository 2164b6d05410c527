package main

import (
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
// every matrix quantized to --type by pagoda's quantizers, with a real
// vocabulary copied from --vocab.
func runModelSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("model synth", stderr)
	arch := fs.String("arch", "", "architecture: llama or qwen2 (default: the shape's)")
	shape := fs.String("shape", "", "real model shape: "+strings.Join(synth.Shapes(), ", "))
	dims := fs.String("dims", "", "dimensions instead of --shape: dim,hidden,layers,heads,kvheads,vocab")
	typ := fs.String("type", "Q4_0", "weight type: "+typeNames())
	out := fs.String("out", "", "output GGUF file")
	vocab := fs.String("vocab", "", "GGUF file to copy the tokenizer from (default: the shape's; \"none\" for no tokenizer)")
	seed := fs.Uint64("seed", 1, "seed of the random weights")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := synthShape(*shape, *dims, *arch)
	if err != nil {
		return err
	}
	t, err := parseWeightType(*typ)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("--out is required")}
	}
	o := synth.Options{Shape: s, Type: t, Seed: *seed}
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
	fmt.Fprintf(stdout, "wrote %s: %s shape, %v weights, %.1f MiB in %.1fs\n", *out, s.Name, t, float64(st.Size())/(1<<20), time.Since(start).Seconds())
	return nil
}

// synthShape resolves --shape or --dims, and --arch.
func synthShape(shape, dims, arch string) (synth.Shape, error) {
	var s synth.Shape
	var err error
	switch {
	case (shape == "") == (dims == ""):
		return s, usageError{errors.New("give exactly one of --shape and --dims")}
	case shape != "":
		s, err = synth.Lookup(shape)
	default:
		s, err = synth.ParseDims(dims)
	}
	if err != nil {
		return s, usageError{err}
	}
	if arch != "" {
		if arch != "llama" && arch != "qwen2" {
			return s, usageError{fmt.Errorf("--arch %q: want llama or qwen2", arch)}
		}
		s.Arch = arch
	}
	return s, nil
}

// parseWeightType parses a weight type name, case-insensitively.
func parseWeightType(name string) (gguf.Type, error) {
	for _, t := range synth.Types() {
		if strings.EqualFold(t.String(), name) {
			return t, nil
		}
	}
	return 0, usageError{fmt.Errorf("--type %q: want one of %s", name, typeNames())}
}

func typeNames() string {
	var n []string
	for _, t := range synth.Types() {
		n = append(n, t.String())
	}
	return strings.Join(n, ", ")
}

// openVocab opens the vocabulary file: path, or "none", or by default the
// shape's: the default model for SmolLM2, else llama.cpp's
// ggml-vocab-NAME.gguf in the model cache (scripts/fetch-synth-vocab.sh
// installs the ones make model does not).
func openVocab(path string, s synth.Shape) (*gguf.File, error) {
	switch {
	case path == "none":
		return nil, nil
	case path == "" && s.Vocab == "":
		return nil, usageError{errors.New("--vocab is required with --dims (a GGUF file, or none)")}
	case path == "" && s.Vocab == "default":
		path = defaultModelPath()
	case path == "":
		path = filepath.Join(filepath.Dir(defaultModelPath()), "ggml-vocab", "ggml-vocab-"+s.Vocab+".gguf")
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--vocab: %w (pass another GGUF, or run scripts/fetch-synth-vocab.sh)", err)
	}
	return f, nil
}
