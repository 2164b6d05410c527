package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"pagoda/engine"
	"pagoda/gguf"
	"pagoda/server"
)

// --generation-config values besides a folder.
const (
	genConfigAuto = "auto" // the model file's recommended sampling defaults
	genConfigVLLM = "vllm" // vLLM's defaults only
)

// generationNames are the generation_config.json fields pagoda reads.
var generationNames = []string{"temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_new_tokens"}

// ggufSamplingKeys are the GGUF keys of the model author's recommended
// sampling settings that llama.cpp reads (general.sampling.*), mapped onto
// vLLM's generation_config names.
var ggufSamplingKeys = []struct{ key, name string }{
	{"general.sampling.temp", "temperature"},
	{"general.sampling.top_p", "top_p"},
	{"general.sampling.top_k", "top_k"},
	{"general.sampling.min_p", "min_p"},
	{"general.sampling.penalty_repeat", "repetition_penalty"},
}

// ggufGenerationDefaults reads the sampling defaults stored in a GGUF
// file's metadata; none stored gives the zero value.
func ggufGenerationDefaults(path string) (server.GenerationDefaults, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return server.GenerationDefaults{}, err
	}
	defer f.Close()
	vals := map[string]float64{}
	for _, k := range ggufSamplingKeys {
		if v, ok := f.Float(k.key); ok { // integer keys are converted
			vals[k.name] = v
		}
	}
	g, err := generationDefaults(vals)
	if err != nil {
		return g, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkGeneration(g); err != nil {
		return g, fmt.Errorf("%s: general.sampling.*: %w", path, err)
	}
	if !g.IsZero() {
		g.Source = "the model file (general.sampling.*)"
	}
	return g, nil
}

// readGenerationConfig reads dir/generation_config.json, as vLLM does for
// --generation-config FOLDER: temperature, top_p, top_k, min_p,
// repetition_penalty and max_new_tokens (the max_tokens cap).
func readGenerationConfig(dir string) (server.GenerationDefaults, error) {
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return server.GenerationDefaults{}, fmt.Errorf("--generation-config: want %q, %q or a folder with generation_config.json: %w",
			genConfigAuto, genConfigVLLM, err)
	}
	raw := map[string]any{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return server.GenerationDefaults{}, fmt.Errorf("--generation-config: %s: %w", path, err)
	}
	vals := map[string]float64{}
	for _, name := range generationNames {
		switch v := raw[name].(type) {
		case nil:
		case float64:
			vals[name] = v
		default:
			return server.GenerationDefaults{}, fmt.Errorf("--generation-config: %s: %s must be a number, got %v", path, name, v)
		}
	}
	g, err := generationDefaults(vals)
	if err == nil {
		err = checkGeneration(g)
	}
	if err != nil {
		return g, fmt.Errorf("--generation-config: %s: %w", path, err)
	}
	g.Source = path
	return g, nil
}

// generationDefaults builds the defaults from values by vLLM name. Integer
// fields must hold integers.
func generationDefaults(vals map[string]float64) (server.GenerationDefaults, error) {
	var g server.GenerationDefaults
	fp := func(name string) *float64 {
		if v, ok := vals[name]; ok {
			return &v
		}
		return nil
	}
	ip := func(name string) (*int, error) {
		v, ok := vals[name]
		if !ok {
			return nil, nil
		}
		if v != float64(int(v)) {
			return nil, fmt.Errorf("%s must be an integer, got %v", name, v)
		}
		n := int(v)
		return &n, nil
	}
	g.Temperature, g.TopP, g.MinP, g.RepetitionPenalty = fp("temperature"), fp("top_p"), fp("min_p"), fp("repetition_penalty")
	var err error
	if g.TopK, err = ip("top_k"); err != nil {
		return g, err
	}
	if g.MaxTokens, err = ip("max_new_tokens"); err != nil {
		return g, err
	}
	return g, nil
}

// checkGeneration checks the defaults against the ranges requests must
// respect, so that a bad file fails at startup rather than every request.
func checkGeneration(g server.GenerationDefaults) error {
	if g.MaxTokens != nil && *g.MaxTokens < 1 {
		return fmt.Errorf("max_new_tokens must be ≥ 1, got %d", *g.MaxTokens)
	}
	p := g.Apply(engine.DefaultSamplingParams())
	return p.Validate(math.MaxInt32)
}

// generationOverride is --override-generation-config: a JSON object of
// generation_config names (temperature, top_p, top_k, min_p,
// repetition_penalty, max_new_tokens) applied over --generation-config's
// defaults, whatever its mode, as vLLM does.
type generationOverride struct {
	raw string
	g   server.GenerationDefaults
}

func (o *generationOverride) String() string { return o.raw }

func (o *generationOverride) Set(v string) error {
	raw := map[string]any{}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return fmt.Errorf("want a JSON object, got %s", v)
	}
	vals := map[string]float64{}
	for k, x := range raw {
		f, ok := x.(float64)
		if !ok || !slices.Contains(generationNames, k) {
			return fmt.Errorf("%s: want numbers for %s", k, strings.Join(generationNames, ", "))
		}
		vals[k] = f
	}
	g, err := generationDefaults(vals)
	if err == nil {
		err = checkGeneration(g)
	}
	if err != nil {
		return err
	}
	o.raw, o.g = v, g
	return nil
}

// merge returns base with the override's fields set over it.
func (o *generationOverride) merge(base server.GenerationDefaults) server.GenerationDefaults {
	g := o.g
	if g.IsZero() {
		return base
	}
	pick := func(b, over *float64) *float64 {
		if over != nil {
			return over
		}
		return b
	}
	pickInt := func(b, over *int) *int {
		if over != nil {
			return over
		}
		return b
	}
	out := server.GenerationDefaults{Temperature: pick(base.Temperature, g.Temperature), TopP: pick(base.TopP, g.TopP),
		MinP: pick(base.MinP, g.MinP), RepetitionPenalty: pick(base.RepetitionPenalty, g.RepetitionPenalty),
		TopK: pickInt(base.TopK, g.TopK), MaxTokens: pickInt(base.MaxTokens, g.MaxTokens),
		Source: "--override-generation-config"}
	if base.Source != "" {
		out.Source = base.Source + " and " + out.Source
	}
	return out
}
