package sample

import (
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	const vocab = 100
	tests := []struct {
		name string
		edit func(*Params)
		want string // "" = valid; else the exact error
	}{
		{"defaults", func(p *Params) {}, ""},
		{"greedy", func(p *Params) { p.Temperature = 0 }, ""},
		{"high temperature", func(p *Params) { p.Temperature = 3 }, ""},
		{"negative temperature", func(p *Params) { p.Temperature = -0.5 }, "temperature must be in [0, inf), got -0.5"},
		{"NaN temperature", func(p *Params) { p.Temperature = float32(math.NaN()) }, "temperature must be in [0, inf), got NaN"},
		{"infinite temperature", func(p *Params) { p.Temperature = float32(math.Inf(1)) }, "temperature must be in [0, inf), got +Inf"},
		{"top_p 0", func(p *Params) { p.TopP = 0 }, "top_p must be in (0, 1], got 0"},
		{"top_p above 1", func(p *Params) { p.TopP = 1.5 }, "top_p must be in (0, 1], got 1.5"},
		{"top_p small", func(p *Params) { p.TopP = 0.01 }, ""},
		{"top_k -1", func(p *Params) { p.TopK = -1 }, ""},
		{"top_k 0", func(p *Params) { p.TopK = 0 }, ""},
		{"top_k beyond vocab", func(p *Params) { p.TopK = 1000 }, ""},
		{"top_k -2", func(p *Params) { p.TopK = -2 }, "top_k must be -1 or 0 (off) or at least 1, got -2"},
		{"min_p 1", func(p *Params) { p.MinP = 1 }, ""},
		{"min_p negative", func(p *Params) { p.MinP = -0.1 }, "min_p must be in [0, 1], got -0.1"},
		{"min_p above 1", func(p *Params) { p.MinP = 1.1 }, "min_p must be in [0, 1], got 1.1"},
		{"repetition 2", func(p *Params) { p.RepetitionPenalty = 2 }, ""},
		{"repetition 0", func(p *Params) { p.RepetitionPenalty = 0 }, "repetition_penalty must be in (0, 2], got 0"},
		{"repetition 2.5", func(p *Params) { p.RepetitionPenalty = 2.5 }, "repetition_penalty must be in (0, 2], got 2.5"},
		{"presence -2", func(p *Params) { p.PresencePenalty = -2 }, ""},
		{"presence 2.1", func(p *Params) { p.PresencePenalty = 2.1 }, "presence_penalty must be in [-2, 2], got 2.1"},
		{"frequency -3", func(p *Params) { p.FrequencyPenalty = -3 }, "frequency_penalty must be in [-2, 2], got -3"},
		{"logprobs 20", func(p *Params) { p.Logprobs = 20 }, ""},
		{"logprobs 21", func(p *Params) { p.Logprobs = 21 }, "logprobs must be in [0, 20], got 21"},
		{"logprobs -1", func(p *Params) { p.Logprobs = -1 }, "logprobs must be in [0, 20], got -1"},
		{"bias ok", func(p *Params) { p.LogitBias = map[int32]float32{0: -100, 99: 100} }, ""},
		{"bias id too big", func(p *Params) { p.LogitBias = map[int32]float32{100: 1} }, "logit_bias token id must be in [0, 100), got 100"},
		{"bias id negative", func(p *Params) { p.LogitBias = map[int32]float32{-1: 1, 200: 1} }, "logit_bias token id must be in [0, 100), got -1"},
		{"bias value", func(p *Params) { p.LogitBias = map[int32]float32{7: 100.5} }, "logit_bias[7] must be in [-100, 100], got 100.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.edit(&p)
			err := p.Validate(vocab)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: unexpected error %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate: no error, want %q", tt.want)
			case tt.want != "" && err.Error() != tt.want:
				t.Fatalf("Validate: error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestZeroParamsInvalid(t *testing.T) {
	err := Params{}.Validate(10)
	if err == nil || !strings.HasPrefix(err.Error(), "top_p") {
		t.Fatalf("Params{}.Validate = %v, want a top_p error", err)
	}
	if err := Greedy().Validate(10); err != nil {
		t.Fatalf("Greedy().Validate = %v", err)
	}
}
