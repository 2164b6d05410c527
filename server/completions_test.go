package server

import (
	"math"
	"strings"
	"testing"
)

const onceUpon = "Once upon a time"

// Greedy completions return exactly what the engine generates on its own,
// for every prompt form, with usage counting the real tokens.
func TestCompletionsPromptForms(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	tok := ts.e.Tokenizer()
	ids := tok.Encode(onceUpon, true, true)
	other := tok.Encode("The cat", true, true)
	for _, tc := range []struct {
		name    string
		prompt  any
		prompts [][]int32
	}{
		{"string", onceUpon, [][]int32{ids}},
		{"strings", []string{onceUpon, "The cat"}, [][]int32{ids, other}},
		{"token_ids", ids, [][]int32{ids}},
		{"token_id_lists", [][]int32{ids, other}, [][]int32{ids, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp completionResponse
			postOK(t, ts.url+"/v1/completions", map[string]any{"model": "stories260K", "prompt": tc.prompt,
				"max_tokens": 12, "temperature": 0}, &resp)
			if resp.Object != "text_completion" || !strings.HasPrefix(resp.ID, "cmpl-") || resp.Model != "stories260K" {
				t.Fatalf("header fields: %+v", resp)
			}
			if len(resp.Choices) != len(tc.prompts) {
				t.Fatalf("%d choices for %d prompts", len(resp.Choices), len(tc.prompts))
			}
			promptTokens, completion := 0, 0
			for i, p := range tc.prompts {
				want := greedy(t, ts.e, p, 12, nil)
				c := resp.Choices[i]
				if c.Index != i || c.Text != want.Text || c.FinishReason == nil || *c.FinishReason != want.FinishReason {
					t.Fatalf("choice %d = %+v, want text %q finish %s", i, c, want.Text, want.FinishReason)
				}
				promptTokens += len(p)
				completion += len(want.TokenIDs)
			}
			u := resp.Usage
			if u.PromptTokens != promptTokens || u.CompletionTokens != completion || u.TotalTokens != promptTokens+completion ||
				u.PromptTokensDetails == nil {
				t.Fatalf("usage %+v, want %d prompt + %d completion tokens", u, promptTokens, completion)
			}
		})
	}
}

// The default max_tokens of completions is 16; usage reports the prompt
// tokens the prefix cache served.
func TestCompletionsDefaultsAndCachedTokens(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	long := strings.Repeat("Once upon a time there was a little girl. ", 6)
	body := map[string]any{"prompt": long, "temperature": 0, "ignore_eos": true}
	var first, second completionResponse
	postOK(t, ts.url+"/v1/completions", body, &first)
	postOK(t, ts.url+"/v1/completions", body, &second)
	if first.Usage.CompletionTokens != completionsDefaultMaxTokens {
		t.Fatalf("default max_tokens gave %d tokens, want %d", first.Usage.CompletionTokens, completionsDefaultMaxTokens)
	}
	if second.Usage.PromptTokensDetails.CachedTokens < 16 {
		t.Fatalf("the repeated prompt of %d tokens had %d cached tokens", second.Usage.PromptTokens,
			second.Usage.PromptTokensDetails.CachedTokens)
	}
	if first.Choices[0].Text != second.Choices[0].Text {
		t.Fatalf("greedy outputs differ with and without cache: %q vs %q", first.Choices[0].Text, second.Choices[0].Text)
	}
}

// n=2 with a seed returns two choices; choice i is the sample of seed+i
// (vLLM's child seeds), so it equals an n=1 request with that seed.
func TestCompletionsParallelSamplingSeeds(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var two, one1 completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "n": 2, "seed": 42, "max_tokens": 16}, &two)
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "seed": 43, "max_tokens": 16}, &one1)
	if len(two.Choices) != 2 || two.Choices[0].Index != 0 || two.Choices[1].Index != 1 {
		t.Fatalf("n=2 choices: %+v", two.Choices)
	}
	if two.Choices[1].Text != one1.Choices[0].Text {
		t.Fatalf("choice 1 of seed 42 = %q, want seed 43's %q", two.Choices[1].Text, one1.Choices[0].Text)
	}
	var again completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "n": 2, "seed": 42, "max_tokens": 16}, &again)
	for i := range 2 {
		if again.Choices[i].Text != two.Choices[i].Text {
			t.Fatalf("seed 42 is not reproducible: %q vs %q", again.Choices[i].Text, two.Choices[i].Text)
		}
	}
}

// logprobs=k returns, per token, the token, its logprob and a dict of the
// chosen token and its k alternatives; with greedy decoding the chosen
// token is the most likely.
func TestCompletionsLogprobs(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 8, "temperature": 0,
		"logprobs": 3}, &resp)
	lp := resp.Choices[0].Logprobs
	n := resp.Usage.CompletionTokens
	if lp == nil || len(lp.Tokens) != n || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n || len(lp.TextOffset) != n {
		t.Fatalf("logprobs of %d tokens: %+v", n, lp)
	}
	for i, tok := range lp.Tokens {
		v := *lp.TokenLogprobs[i]
		top := lp.TopLogprobs[i]
		if v > 0 || len(top) < 3 || len(top) > 4 || math.Abs(top[tok]-v) > 1e-6 {
			t.Fatalf("token %d %q: logprob %v, top %v", i, tok, v, top)
		}
		for _, alt := range top {
			if alt > v+1e-6 {
				t.Fatalf("token %d %q (%v) is not the greedy choice among %v", i, tok, v, top)
			}
		}
		if i > 0 && lp.TextOffset[i] != lp.TextOffset[i-1]+len(lp.Tokens[i-1]) {
			t.Fatalf("text offsets %v for tokens %q", lp.TextOffset, lp.Tokens)
		}
	}
}

// echo prepends the prompt; with logprobs the prompt tokens come first and
// the first one has none.
func TestCompletionsEcho(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 4, "temperature": 0,
		"echo": true, "logprobs": 1}, &resp)
	c := resp.Choices[0]
	want := greedy(t, ts.e, ts.e.Tokenizer().Encode(onceUpon, true, true), 4, nil)
	if c.Text != onceUpon+want.Text {
		t.Fatalf("echo text %q, want %q", c.Text, onceUpon+want.Text)
	}
	n := resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if len(c.Logprobs.Tokens) != n || c.Logprobs.TokenLogprobs[0] != nil || c.Logprobs.TokenLogprobs[1] == nil {
		t.Fatalf("echo logprobs: %d tokens (want %d), first %v", len(c.Logprobs.Tokens), n, c.Logprobs.TokenLogprobs[:2])
	}
}

// vLLM's prompt_logprobs: per prompt token (null for the first) the token
// itself with its rank and its k best alternatives ranked 1..k, keyed by
// token id; the token's logprob equals the echoed legacy logprob. Chat
// puts the list on the response.
func TestPromptLogprobs(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 2, "temperature": 0,
		"echo": true, "logprobs": 1, "prompt_logprobs": 3}, &resp)
	c := resp.Choices[0]
	ids := ts.e.Tokenizer().Encode(onceUpon, true, true)
	if len(c.PromptLogprobs) != len(ids) || c.PromptLogprobs[0] != nil {
		t.Fatalf("prompt_logprobs has %d entries for %d prompt tokens, first %v", len(c.PromptLogprobs), len(ids), c.PromptLogprobs[0])
	}
	for i := 1; i < len(ids); i++ {
		e := c.PromptLogprobs[i]
		self, ok := e[itoa(ids[i])]
		if !ok || len(e) < 3 || len(e) > 4 || self.Rank < 1 || self.DecodedToken != ts.e.Tokenizer().Piece(ids[i]) {
			t.Fatalf("entry %d (token %d): %+v", i, ids[i], e)
		}
		if legacy := *c.Logprobs.TokenLogprobs[i]; math.Abs(legacy-self.Logprob) > 1e-9 || len(c.Logprobs.TopLogprobs[i]) > 2 {
			t.Fatalf("entry %d: logprob %v, echoed legacy %v with top %v", i, self.Logprob, legacy, c.Logprobs.TopLogprobs[i])
		}
		ranks := map[int]bool{}
		for id, lp := range e {
			if id != itoa(ids[i]) || lp.Rank <= 3 {
				ranks[lp.Rank] = true
			}
			if lp.Rank == 1 && lp.Logprob < self.Logprob {
				t.Fatalf("entry %d: rank 1 %+v below the token's %+v", i, lp, self)
			}
		}
		if !ranks[1] || !ranks[2] || !ranks[3] {
			t.Fatalf("entry %d: ranks %v, want 1..3", i, ranks)
		}
	}
	var chat chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 2, "prompt_logprobs": 0}, &chat)
	if len(chat.PromptLogprobs) < 2 || chat.PromptLogprobs[0] != nil || len(chat.PromptLogprobs[1]) != 1 {
		t.Fatalf("chat prompt_logprobs: %v", chat.PromptLogprobs)
	}
}

// A stop string ends the text before it; stop_reason names it;
// include_stop_str_in_output keeps it.
func TestCompletionsStop(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var full completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 24, "temperature": 0}, &full)
	text := full.Choices[0].Text
	words := strings.Fields(text)
	if len(words) < 4 {
		t.Fatalf("greedy text too short to pick a stop word: %q", text)
	}
	stop := words[2]
	before := text[:strings.Index(text, stop)]
	for _, tc := range []struct {
		include bool
		want    string
	}{{false, before}, {true, before + stop}} {
		var resp completionResponse
		postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 24, "temperature": 0,
			"stop": []string{"zzzz", stop}, "include_stop_str_in_output": tc.include}, &resp)
		c := resp.Choices[0]
		if c.Text != tc.want || *c.FinishReason != "stop" || c.StopReason != stop {
			t.Fatalf("include=%v: %+v, want text %q stopped by %q", tc.include, c, tc.want, stop)
		}
	}
}

// vLLM's extra fields reach the engine: min_tokens with ignore_eos off,
// stop_token_ids, logit_bias forcing a token.
func TestCompletionsExtraFields(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	tok := ts.e.Tokenizer()
	forced := tok.Encode(" cat", false, false)[0]
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 5, "temperature": 0,
		"logit_bias": map[string]float64{itoa(forced): 100}, "logprobs": 0}, &resp)
	for _, s := range resp.Choices[0].Logprobs.Tokens {
		if s != tok.Piece(forced) {
			t.Fatalf("logit_bias +100 on %d did not force it: tokens %q", forced, resp.Choices[0].Logprobs.Tokens)
		}
	}
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 5, "temperature": 0,
		"logit_bias": map[string]float64{itoa(forced): 100}, "stop_token_ids": []int32{forced}}, &resp)
	if c := resp.Choices[0]; *c.FinishReason != "stop" || c.StopReason != float64(forced) || resp.Usage.CompletionTokens != 1 {
		t.Fatalf("stop_token_ids: %+v usage %+v", c, resp.Usage)
	}
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 40, "min_tokens": 40,
		"temperature": 0, "top_k": 1, "repetition_penalty": 1.1, "min_p": 0.05}, &resp)
	if resp.Usage.CompletionTokens != 40 {
		t.Fatalf("min_tokens 40 gave %d tokens", resp.Usage.CompletionTokens)
	}
}
