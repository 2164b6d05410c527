package server

import (
	"fmt"
	"strings"

	"pagoda/engine"
)

// prepare applies the server's per-request settings to p after the request
// fields: the --max-logprobs bound (400 beyond, as vLLM), the seed derived
// from --seed for requests without one, and the --generation-config cap on
// max_tokens.
func (b *backend) prepare(p *engine.SamplingParams) *apiError {
	if p.ReturnLogprobs && p.Logprobs > b.maxLogprobs {
		return badRequest("logprobs", "logprobs must be in [0, %d] (--max-logprobs), got %d", b.maxLogprobs, p.Logprobs)
	}
	if p.PromptLogprobs > b.maxLogprobs {
		return badRequest("prompt_logprobs", "prompt_logprobs must be in [0, %d] (--max-logprobs), got %d",
			b.maxLogprobs, p.PromptLogprobs)
	}
	if p.Seed == nil && b.seed != nil {
		s := deriveSeed(*b.seed, b.seedCount.Add(1))
		p.Seed = &s
	}
	b.gen.capMaxTokens(p)
	return nil
}

// deriveSeed is the seed of the k-th unseeded request of a server started
// with --seed base: splitmix64 of base and k, so that nearby k give
// unrelated seeds. Non-negative.
func deriveSeed(base int64, k uint64) int64 {
	z := uint64(base) + k*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z >> 1)
}

// resolvedMaxTokens is the request's max_tokens as the engine applies it
// (0 means up to the model length), for vllm:request_params_max_tokens.
func (b *backend) resolvedMaxTokens(p engine.SamplingParams, promptLen int) int {
	if p.MaxTokens > 0 {
		return p.MaxTokens
	}
	return max(0, b.e.Config().MaxModelLen-promptLen)
}

// logRequest logs one line per engine request when --enable-log-requests
// is on: its id, prompt length and sampling parameters.
func (b *backend) logRequest(id string, prompt []int32, p engine.SamplingParams) {
	if b.logRequests {
		b.log.Printf("INFO Received request %s: prompt %d tokens, params: %s", id, len(prompt), paramsSummary(p))
	}
}

// paramsSummary writes p in vLLM's SamplingParams vocabulary, omitting
// what is off.
func paramsSummary(p engine.SamplingParams) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "n=%d temperature=%g top_p=%g top_k=%d min_p=%g", p.N, p.Temperature, p.TopP, p.TopK, p.MinP)
	if p.BestOf > 0 && p.BestOf != p.N {
		fmt.Fprintf(&sb, " best_of=%d", p.BestOf)
	}
	if p.PresencePenalty != 0 || p.FrequencyPenalty != 0 || p.RepetitionPenalty != 1 {
		fmt.Fprintf(&sb, " presence_penalty=%g frequency_penalty=%g repetition_penalty=%g",
			p.PresencePenalty, p.FrequencyPenalty, p.RepetitionPenalty)
	}
	if p.MaxTokens > 0 {
		fmt.Fprintf(&sb, " max_tokens=%d", p.MaxTokens)
	}
	if p.MinTokens > 0 {
		fmt.Fprintf(&sb, " min_tokens=%d", p.MinTokens)
	}
	if p.Seed != nil {
		fmt.Fprintf(&sb, " seed=%d", *p.Seed)
	}
	if len(p.Stop) > 0 {
		fmt.Fprintf(&sb, " stop=%q", p.Stop)
	}
	if len(p.StopTokenIDs) > 0 {
		fmt.Fprintf(&sb, " stop_token_ids=%v", p.StopTokenIDs)
	}
	if p.IgnoreEOS {
		sb.WriteString(" ignore_eos=true")
	}
	if p.ReturnLogprobs {
		fmt.Fprintf(&sb, " logprobs=%d", p.Logprobs)
	}
	if p.PromptLogprobs >= 0 {
		fmt.Fprintf(&sb, " prompt_logprobs=%d", p.PromptLogprobs)
	}
	if p.UseBeamSearch {
		sb.WriteString(" use_beam_search=true")
	}
	if len(p.LogitBias) > 0 {
		fmt.Fprintf(&sb, " logit_bias=%d tokens", len(p.LogitBias))
	}
	return sb.String()
}
