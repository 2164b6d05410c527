// Package sample turns one row of logits into the next token of one
// sequence, with vLLM's sampling semantics.
//
// A Sampler belongs to one sequence. It owns the sequence's random number
// generator (so a seeded sequence draws the same tokens whatever else runs
// beside it) and the counts of the tokens it has generated (for the
// penalties). Each step, Sample processes the logits in vLLM's order:
//
//	raw logits ──► logit bias ──► penalties ──► temperature ──► min-p ──► top-k ──► top-p ──► draw
//	    │           (added)     repetition (prompt+output),    (÷T)     (p ≥ min_p·p_max)  (nucleus of the
//	    │                       frequency, presence (output)                                renormalized rest)
//	    └──► log-softmax ──► Result.Logprob, Result.Rank, Result.Top   (raw logprobs, as vLLM returns by default)
//
// Greedy decoding (temperature 0, or top-k 1) takes the argmax of the
// biased and penalized logits, ties going to the lowest token id.
//
// Cost per call for a vocabulary of V: a few O(V) passes (copy, max,
// rank) and V exponentials for the raw logprob; random sampling adds V more
// exponentials unless top-k is set (then about k). Top-k selects with a
// bounded heap (O(V) typically, O(V log k) at worst) and top-p without
// top-k sorts only the part of the vocabulary where the nucleus ends. No
// call allocates once the sampler's buffers have grown.
//
// Memory: a Sampler keeps O(distinct prompt and output tokens) for its
// penalties; the V-sized working copy of the logits lives in a Scratch,
// which samplers can share (SampleWith).
package sample

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Limits of the parameters, as in vLLM and the OpenAI API.
const (
	// MaxLogprobs is the most top logprobs a request may ask for (vLLM's
	// default max_logprobs, and the OpenAI API limit).
	MaxLogprobs = 20
	// MaxPenalty bounds |PresencePenalty| and |FrequencyPenalty|.
	MaxPenalty = 2
	// MaxRepetitionPenalty bounds RepetitionPenalty from above.
	MaxRepetitionPenalty = 2
	// MaxLogitBias bounds |LogitBias[id]|.
	MaxLogitBias = 100

	// greedyEpsilon: temperatures below it mean greedy (vLLM _SAMPLING_EPS).
	greedyEpsilon = 1e-5
	// minTemperature: positive temperatures below it are raised to it, for
	// numerical stability, as vLLM does (_MAX_TEMP).
	minTemperature = 1e-2
)

// Params are the sampling parameters of one request, named as vLLM's
// SamplingParams. The zero value is not valid (TopP and RepetitionPenalty
// have no "off" at zero); start from DefaultParams.
type Params struct {
	// Temperature divides the logits; 0 means greedy. Positive values below
	// 0.01 are raised to 0.01 (vLLM).
	Temperature float32
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP (1 = off).
	TopP float32
	// TopK keeps the TopK most likely tokens, ties going to the lower id
	// (0 or -1 = off; 1 = greedy).
	TopK int
	// MinP drops tokens whose probability is below MinP times the most
	// likely token's (0 = off). Applied after temperature.
	MinP float32
	// RepetitionPenalty (HF/vLLM style, 1 = off) applies to every token that
	// appears in the prompt or the output: positive logits are divided by it,
	// the others multiplied.
	RepetitionPenalty float32
	// PresencePenalty (OpenAI style) is subtracted once from the logit of
	// every token that appears in the output.
	PresencePenalty float32
	// FrequencyPenalty (OpenAI style) is subtracted from a token's logit once
	// per occurrence in the output.
	FrequencyPenalty float32
	// LogitBias is added to the logits of the given token ids before
	// anything else.
	LogitBias map[int32]float32
	// Seed makes the draws reproducible; nil draws a random seed.
	Seed *int64
	// Logprobs is how many of the most likely tokens (by raw logprob) to
	// return besides the chosen one, at most MaxLogprobs (0 = only the
	// chosen token's).
	Logprobs int
}

// DefaultParams returns vLLM's defaults: temperature 1, every filter and
// penalty off, random seed, no top logprobs.
func DefaultParams() Params {
	return Params{Temperature: 1, TopP: 1, TopK: 0, RepetitionPenalty: 1}
}

// Greedy returns the parameters of greedy decoding (temperature 0).
func Greedy() Params {
	p := DefaultParams()
	p.Temperature = 0
	return p
}

// Child returns the parameters of sample index of a request with n > 1:
// the same, except that a seeded request gives child i the seed Seed+i, as
// vLLM does, so that the n samples differ but stay reproducible. Unseeded
// children each draw their own random seed.
func (p Params) Child(index int) Params {
	if p.Seed != nil {
		seed := *p.Seed + int64(index)
		p.Seed = &seed
	}
	return p
}

// Validate checks every field against vLLM's allowed range for a model with
// vocabSize tokens. The error names the field (by its API name) and the range.
func (p Params) Validate(vocabSize int) error {
	checks := []struct {
		name   string
		v      float32
		lo, hi float64
		loOpen bool
	}{
		{"temperature", p.Temperature, 0, math.Inf(1), false},
		{"top_p", p.TopP, 0, 1, true},
		{"min_p", p.MinP, 0, 1, false},
		{"repetition_penalty", p.RepetitionPenalty, 0, MaxRepetitionPenalty, true},
		{"presence_penalty", p.PresencePenalty, -MaxPenalty, MaxPenalty, false},
		{"frequency_penalty", p.FrequencyPenalty, -MaxPenalty, MaxPenalty, false},
	}
	for _, c := range checks {
		if err := checkRange(c.name, c.v, c.lo, c.hi, c.loOpen); err != nil {
			return err
		}
	}
	if p.TopK < -1 {
		return fmt.Errorf("top_k must be -1 or 0 (off) or at least 1, got %d", p.TopK)
	}
	if p.Logprobs < 0 || p.Logprobs > MaxLogprobs {
		return fmt.Errorf("logprobs must be in [0, %d], got %d", MaxLogprobs, p.Logprobs)
	}
	for _, id := range slices.Sorted(maps.Keys(p.LogitBias)) { // sorted: the same error every time
		b := p.LogitBias[id]
		if id < 0 || int(id) >= vocabSize {
			return fmt.Errorf("logit_bias token id must be in [0, %d), got %d", vocabSize, id)
		}
		if err := checkRange(fmt.Sprintf("logit_bias[%d]", id), b, -MaxLogitBias, MaxLogitBias, false); err != nil {
			return err
		}
	}
	return nil
}

// checkRange reports whether v is in [lo, hi] (or (lo, hi] when loOpen).
// NaN and infinities are never in range; hi = +Inf means unbounded above.
func checkRange(name string, v float32, lo, hi float64, loOpen bool) error {
	x := float64(v)
	if x <= hi && (x > lo || (!loOpen && x == lo)) && !math.IsInf(x, 0) {
		return nil
	}
	open, upper := "[", strconv.FormatFloat(hi, 'g', -1, 64)+"]"
	if loOpen {
		open = "("
	}
	if math.IsInf(hi, 1) {
		upper = "inf)"
	}
	return fmt.Errorf("%s must be in %s%g, %s, got %s", name, open, lo, upper,
		strconv.FormatFloat(x, 'g', -1, 32))
}
