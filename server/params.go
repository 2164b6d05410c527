package server

import (
	"strconv"

	"pagoda/engine"
	"pagoda/sample"
)

// samplingParams maps the request fields onto engine.SamplingParams, starting
// from base: vLLM's defaults (temperature 1, top_p 1, n 1), or the server's
// --generation-config defaults over them. maxTokens is the
// max_tokens to use when the request has none (0 = up to the model length).
// Ranges are checked by SamplingParams.Validate; this only rejects what the
// engine cannot represent.
func (f *samplingFields) samplingParams(base engine.SamplingParams, maxTokens *int, defaultMax int, gc *grammarCache) (engine.SamplingParams, *apiError) {
	p := base
	if f.UseBeamSearch {
		p.Temperature = 0 // beam search is deterministic; an explicit temperature is still checked
	}
	setInt(&p.N, f.N)
	setInt(&p.BestOf, f.BestOf)
	setF32(&p.Temperature, f.Temperature)
	setF32(&p.TopP, f.TopP)
	setInt(&p.TopK, f.TopK)
	setF32(&p.MinP, f.MinP)
	setF32(&p.RepetitionPenalty, f.RepetitionPenalty)
	setF32(&p.PresencePenalty, f.PresencePenalty)
	setF32(&p.FrequencyPenalty, f.FrequencyPenalty)
	p.MaxTokens = defaultMax
	if maxTokens != nil {
		if *maxTokens < 1 {
			return p, badRequest("max_tokens", "max_tokens must be ≥ 1, got %d", *maxTokens)
		}
		p.MaxTokens = *maxTokens
	}
	setInt(&p.MinTokens, f.MinTokens)
	p.Stop = f.Stop
	for _, s := range f.Stop {
		if s == "" {
			return p, badRequest("stop", "stop strings must not be empty")
		}
	}
	p.StopTokenIDs = f.StopTokenIDs
	p.IncludeStopStrInOutput = f.IncludeStopStrInOutput
	p.IgnoreEOS = f.IgnoreEOS
	if f.SkipSpecialTokens != nil {
		p.SkipSpecialTokens = *f.SkipSpecialTokens
	}
	p.Seed = f.Seed
	if len(f.LogitBias) > 0 {
		p.LogitBias = make(map[int32]float32, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return p, badRequest("logit_bias", "logit_bias keys must be token ids, got %q", k)
			}
			p.LogitBias[int32(id)] = float32(v)
		}
	}
	p.UseBeamSearch = f.UseBeamSearch
	setF64(&p.LengthPenalty, f.LengthPenalty)
	p.EarlyStopping = f.EarlyStopping
	if f.PromptLogprobs != nil {
		v := *f.PromptLogprobs
		if v < 0 || v > sample.MaxLogprobs {
			return p, badRequest("prompt_logprobs", "prompt_logprobs must be in [0, %d], got %d", sample.MaxLogprobs, v)
		}
		if f.Stream {
			return p, badRequest("prompt_logprobs", "prompt_logprobs are not available when stream is true")
		}
		p.PromptLogprobs = v
	}
	g, aerr := f.grammar(gc)
	if aerr != nil {
		return p, aerr
	}
	p.Grammar = g
	if f.Stream && (p.UseBeamSearch || (p.BestOf != 0 && p.BestOf != p.N)) {
		return p, badRequest("stream", "stream is not supported with use_beam_search or best_of > n: "+
			"their outputs are chosen at the end")
	}
	return p, nil
}

// validate checks p against the model's vocabulary; errors name the field.
func validate(p *engine.SamplingParams, vocab int) *apiError {
	if err := p.Validate(vocab); err != nil {
		return paramError(err)
	}
	return nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setF32(dst *float32, v *float64) {
	if v != nil {
		*dst = float32(*v)
	}
}

func setF64(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}
