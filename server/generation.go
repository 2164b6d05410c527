package server

import (
	"fmt"
	"strings"

	"pagoda/engine"
)

// GenerationDefaults are the sampling defaults a model's author recommends
// (vLLM's --generation-config): they replace vLLM's defaults for requests
// that do not set the field. MaxTokens caps every request's max_tokens, as
// vLLM applies generation_config.json's max_new_tokens. A nil field keeps
// vLLM's default.
type GenerationDefaults struct {
	Temperature, TopP, MinP, RepetitionPenalty *float64
	TopK, MaxTokens                            *int
	// Source names where they came from, for the startup log.
	Source string
}

// IsZero reports whether no default is set.
func (g GenerationDefaults) IsZero() bool {
	return g.Temperature == nil && g.TopP == nil && g.MinP == nil && g.RepetitionPenalty == nil &&
		g.TopK == nil && g.MaxTokens == nil
}

// String lists the defaults set, e.g. "temperature=0.7 top_p=0.9".
func (g GenerationDefaults) String() string {
	var parts []string
	f := func(name string, v *float64) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%g", name, *v))
		}
	}
	i := func(name string, v *int) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", name, *v))
		}
	}
	f("temperature", g.Temperature)
	f("top_p", g.TopP)
	i("top_k", g.TopK)
	f("min_p", g.MinP)
	f("repetition_penalty", g.RepetitionPenalty)
	i("max_tokens", g.MaxTokens)
	return strings.Join(parts, " ")
}

// Apply returns p with the defaults set.
func (g GenerationDefaults) Apply(p engine.SamplingParams) engine.SamplingParams {
	setF32(&p.Temperature, g.Temperature)
	setF32(&p.TopP, g.TopP)
	setInt(&p.TopK, g.TopK)
	setF32(&p.MinP, g.MinP)
	setF32(&p.RepetitionPenalty, g.RepetitionPenalty)
	return p
}

// capMaxTokens applies the MaxTokens cap to p, whose MaxTokens 0 means up
// to the model length.
func (g GenerationDefaults) capMaxTokens(p *engine.SamplingParams) {
	if c := g.MaxTokens; c != nil && *c > 0 && (p.MaxTokens == 0 || p.MaxTokens > *c) {
		p.MaxTokens = *c
	}
}
