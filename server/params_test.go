package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"pagoda/engine"
)

// Every request field lands in its engine.SamplingParams field; absent
// fields keep vLLM's defaults.
func TestSamplingParamsMapping(t *testing.T) {
	seed := int64(9)
	for _, tc := range []struct {
		name       string
		body       string
		defaultMax int
		want       func(p *engine.SamplingParams)
	}{
		{"defaults_completions", `{}`, 16, func(p *engine.SamplingParams) { p.MaxTokens = 16 }},
		{"defaults_chat", `{}`, 0, func(p *engine.SamplingParams) {}},
		{"openai_fields", `{"n": 3, "best_of": 4, "temperature": 0.5, "top_p": 0.9, "max_tokens": 7, "stop": "END",
			"seed": 9, "presence_penalty": 0.25, "frequency_penalty": -0.5, "logit_bias": {"17": -100, "3": 2.5}}`, 16,
			func(p *engine.SamplingParams) {
				p.N, p.BestOf, p.Temperature, p.TopP, p.MaxTokens, p.Stop = 3, 4, 0.5, 0.9, 7, []string{"END"}
				p.Seed, p.PresencePenalty, p.FrequencyPenalty = &seed, 0.25, -0.5
				p.LogitBias = map[int32]float32{17: -100, 3: 2.5}
			}},
		{"vllm_fields", `{"top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2, "min_tokens": 2, "ignore_eos": true,
			"stop_token_ids": [4, 5], "include_stop_str_in_output": true, "skip_special_tokens": false,
			"length_penalty": 0.7, "early_stopping": true, "stop": ["a", "b"]}`, 16,
			func(p *engine.SamplingParams) {
				p.TopK, p.MinP, p.RepetitionPenalty, p.MinTokens, p.IgnoreEOS = 5, 0.1, 1.2, 2, true
				p.StopTokenIDs, p.IncludeStopStrInOutput, p.SkipSpecialTokens = []int32{4, 5}, true, false
				p.LengthPenalty, p.EarlyStopping, p.MaxTokens, p.Stop = 0.7, true, 16, []string{"a", "b"}
			}},
		{"beam_search_greedy", `{"use_beam_search": true, "best_of": 3}`, 16, func(p *engine.SamplingParams) {
			p.UseBeamSearch, p.BestOf, p.Temperature, p.MaxTokens = true, 3, 0, 16
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f samplingFields
			if err := json.Unmarshal([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			got, aerr := f.samplingParams(engine.DefaultSamplingParams(), f.MaxTokens, tc.defaultMax, &grammarCache{})
			if aerr != nil {
				t.Fatal(aerr)
			}
			want := engine.DefaultSamplingParams()
			want.MaxTokens = tc.defaultMax
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// Beam search and best_of > n return the n best of more sequences.
func TestBeamSearchAndBestOf(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for _, body := range []map[string]any{
		{"prompt": onceUpon, "max_tokens": 6, "use_beam_search": true, "best_of": 3, "n": 2},
		{"prompt": onceUpon, "max_tokens": 6, "best_of": 3, "n": 2, "seed": 5},
	} {
		var resp completionResponse
		postOK(t, ts.url+"/v1/completions", body, &resp)
		if len(resp.Choices) != 2 || resp.Choices[0].Index != 0 || resp.Choices[1].Index != 1 ||
			resp.Choices[0].Text == "" || resp.Usage.CompletionTokens == 0 {
			t.Fatalf("%v: %+v", body, resp)
		}
	}
	settle(t, ts)
}
