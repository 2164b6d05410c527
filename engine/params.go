package engine

import (
	"fmt"

	"pagoda/grammar"
	"pagoda/sample"
)

// SamplingParams are a request's generation parameters, named as vLLM's
// SamplingParams. Start from DefaultSamplingParams.
type SamplingParams struct {
	// Sampler parameters: temperature, top_p, top_k, min_p, penalties,
	// logit_bias, seed, and Logprobs = number of top logprobs per token.
	sample.Params
	// N is the number of completions returned.
	N int
	// BestOf is the number of sequences generated (≥ N); the N with the
	// highest cumulative logprob are returned. With beam search it is the
	// beam width.
	BestOf int
	// MaxTokens bounds the generated tokens; 0 means up to the model length.
	MaxTokens int
	// MinTokens suppresses EOS and stop tokens until this many are generated.
	MinTokens              int
	Stop                   []string
	StopTokenIDs           []int32
	IncludeStopStrInOutput bool
	IgnoreEOS              bool
	SkipSpecialTokens      bool
	// ReturnLogprobs returns the logprob of each generated token (and
	// Params.Logprobs top alternatives).
	ReturnLogprobs bool
	// PromptLogprobs, when ≥ 0, returns the logprob of each prompt token and
	// that many top alternatives; -1 turns it off.
	PromptLogprobs int
	// Beam search (vLLM's legacy use_beam_search): BestOf beams, scores
	// cumulative logprob / length^LengthPenalty.
	UseBeamSearch bool
	LengthPenalty float64
	EarlyStopping bool
	// Grammar, when set, constrains the output (structured outputs): before
	// each draw the tokens the grammar cannot take next are masked, EOS is
	// allowed exactly when the grammar can end, and the sequence stops with
	// "stop" once the grammar is complete. Not with beam search.
	Grammar *grammar.Grammar
	// ReasoningEnd delays Grammar for a reasoning model (vLLM's
	// reasoning_ended, with a reasoning parser): when set, the output is
	// drawn unconstrained up to and including the first place its tokens
	// end with this sequence (the parser's "</think>"), and the grammar
	// constrains the tokens after it. Empty: the grammar applies from the
	// first token. It has no effect without Grammar.
	ReasoningEnd []int32
	// ThinkingBudget bounds a reasoning model's thinking (vLLM's
	// thinking_token_budget): once the output has drawn this many tokens
	// inside thinking sections, the next tokens are forced to be
	// ThinkingEnd (engine's thinkingBudget). A section opens at the first
	// token when ThinkingFromStart (the prompt left the reasoning open) and
	// after each ThinkingStart in the output, and closes at ThinkingEnd's
	// first token. -1 (the default): no bound; it needs ThinkingEnd.
	ThinkingBudget    int
	ThinkingStart     []int32
	ThinkingEnd       []int32
	ThinkingFromStart bool
}

// DefaultSamplingParams returns vLLM's defaults: n 1, temperature 1, skip
// special tokens, no logprobs.
func DefaultSamplingParams() SamplingParams {
	return SamplingParams{Params: sample.DefaultParams(), N: 1, SkipSpecialTokens: true,
		PromptLogprobs: -1, LengthPenalty: 1, ThinkingBudget: -1}
}

// GreedyParams returns greedy decoding of maxTokens tokens.
func GreedyParams(maxTokens int) SamplingParams {
	p := DefaultSamplingParams()
	p.Temperature = 0
	p.MaxTokens = maxTokens
	return p
}

// MaxN bounds n and best_of.
const MaxN = 64

// Bounds on the stop conditions of one request, so that checking them stays
// a small constant cost per token on the engine loop (OpenAI allows 4 stop
// strings; vLLM sets no bound).
const (
	MaxStopStrings  = 64  // stop strings per request
	MaxStopBytes    = 256 // bytes per stop string
	MaxStopTokenIDs = 256 // stop_token_ids per request
)

// bestOf is the number of sequences the request runs.
func (p *SamplingParams) bestOf() int { return max(p.N, p.BestOf) }

// needsScores reports whether the generated tokens' logprobs are used:
// returned, summed to rank best_of samples, or scoring beams.
func (p *SamplingParams) needsScores() bool {
	return p.ReturnLogprobs || p.bestOf() > p.N || p.UseBeamSearch
}

// Validate checks the parameters for a model with vocabSize tokens; errors
// name the field and the allowed range.
func (p *SamplingParams) Validate(vocabSize int) error {
	if err := p.Params.Validate(vocabSize); err != nil {
		return err
	}
	switch {
	case p.N < 1 || p.N > MaxN:
		return fmt.Errorf("n must be in [1, %d], got %d", MaxN, p.N)
	case p.BestOf != 0 && (p.BestOf < p.N || p.BestOf > MaxN):
		return fmt.Errorf("best_of must be in [n=%d, %d], got %d", p.N, MaxN, p.BestOf)
	case p.MaxTokens < 0:
		return fmt.Errorf("max_tokens must be ≥ 1, got %d", p.MaxTokens)
	case p.MinTokens < 0 || (p.MaxTokens > 0 && p.MinTokens > p.MaxTokens):
		return fmt.Errorf("min_tokens must be in [0, max_tokens=%d], got %d", p.MaxTokens, p.MinTokens)
	case p.PromptLogprobs < -1 || p.PromptLogprobs > sample.MaxLogprobs:
		return fmt.Errorf("prompt_logprobs must be in [0, %d], got %d", sample.MaxLogprobs, p.PromptLogprobs)
	}
	if len(p.Stop) > MaxStopStrings {
		return fmt.Errorf("stop must have at most %d strings, got %d", MaxStopStrings, len(p.Stop))
	}
	for i, s := range p.Stop {
		if len(s) > MaxStopBytes {
			return fmt.Errorf("stop[%d] must be at most %d bytes, got %d", i, MaxStopBytes, len(s))
		}
	}
	if len(p.StopTokenIDs) > MaxStopTokenIDs {
		return fmt.Errorf("stop_token_ids must have at most %d ids, got %d", MaxStopTokenIDs, len(p.StopTokenIDs))
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 || int(id) >= vocabSize {
			return fmt.Errorf("stop_token_ids must be in [0, %d), got %d", vocabSize, id)
		}
	}
	for _, ids := range [][]int32{p.ReasoningEnd, p.ThinkingStart, p.ThinkingEnd} {
		for _, id := range ids {
			if id < 0 || int(id) >= vocabSize {
				return fmt.Errorf("the reasoning end tokens must be in [0, %d), got %d", vocabSize, id)
			}
		}
	}
	if p.ThinkingBudget >= 0 && len(p.ThinkingEnd) == 0 {
		return fmt.Errorf("thinking_token_budget needs a reasoning parser (its end-of-thinking tokens)")
	}
	if p.ThinkingBudget >= 0 && p.UseBeamSearch {
		return fmt.Errorf("thinking_token_budget cannot be combined with use_beam_search")
	}
	if p.UseBeamSearch {
		if p.Grammar != nil {
			return fmt.Errorf("use_beam_search cannot be combined with a structured-output constraint")
		}
		if p.Temperature != 0 {
			return fmt.Errorf("temperature must be 0 with use_beam_search, got %v", p.Temperature)
		}
		if p.bestOf() < 2 {
			return fmt.Errorf("best_of (the beam width) must be ≥ 2 with use_beam_search, got %d", p.bestOf())
		}
	}
	return nil
}
