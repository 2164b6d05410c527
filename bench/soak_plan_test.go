package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func testPlanConfig() PlanConfig {
	return PlanConfig{Model: "m", Endpoints: []string{CompletionsPath, ChatPath}, MaxTokens: 16, MaxPromptWords: 8,
		HangupRate: 0.2, MalformedRate: 0.05, Seed: 42}
}

// The same seed and index give the same request; another seed another plan.
func TestPlanDeterministic(t *testing.T) {
	c := testPlanConfig()
	differ := 0
	for i := range 200 {
		a, b := planRequest(c, i), planRequest(c, i)
		if !bytes.Equal(a.Body, b.Body) || a.Shape != b.Shape || a.Hangup != b.Hangup || a.HangupAt != b.HangupAt {
			t.Fatalf("request %d planned twice differs: %+v vs %+v", i, a, b)
		}
		c2 := c
		c2.Seed++
		if !bytes.Equal(a.Body, planRequest(c2, i).Body) {
			differ++
		}
	}
	if differ < 150 {
		t.Fatalf("only %d of 200 requests change with the seed", differ)
	}
}

// Well-formed requests are valid JSON that say what the plan expects: the
// stream flag, n × prompts choices, and no stream with beam search, best_of
// > n or prompt_logprobs.
func TestPlanWellFormed(t *testing.T) {
	c := testPlanConfig()
	c.HangupRate, c.MalformedRate = 0.5, 0
	for i := range 2000 {
		r := planRequest(c, i)
		var body struct {
			Model          string          `json:"model"`
			Prompt         json.RawMessage `json:"prompt"`
			Messages       []any           `json:"messages"`
			N              int             `json:"n"`
			BestOf         int             `json:"best_of"`
			Beam           bool            `json:"use_beam_search"`
			Stream         bool            `json:"stream"`
			PromptLogprobs *int            `json:"prompt_logprobs"`
			MaxTokens      int             `json:"max_tokens"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request %d: %v: %s", i, err, r.Body)
		}
		prompts := 1
		var list []string
		if json.Unmarshal(body.Prompt, &list) == nil {
			prompts = len(list)
		}
		switch {
		case body.Model != "m" || body.MaxTokens < 1 || body.MaxTokens > 16:
			t.Fatalf("request %d: model or max_tokens: %s", i, r.Body)
		case body.Stream != r.Stream || r.Choices != body.N*prompts:
			t.Fatalf("request %d: stream %v, choices %d: %s", i, r.Stream, r.Choices, r.Body)
		case body.Stream && (body.Beam || body.BestOf > body.N || body.PromptLogprobs != nil):
			t.Fatalf("request %d streams a shape that cannot: %s", i, r.Body)
		case body.BestOf != 0 && body.BestOf < body.N, body.Beam && body.BestOf < 2:
			t.Fatalf("request %d: best_of: %s", i, r.Body)
		case (r.Endpoint == ChatPath) != (len(body.Messages) > 0):
			t.Fatalf("request %d: endpoint %s: %s", i, r.Endpoint, r.Body)
		case r.Hangup == HangupMidStream && !r.Stream:
			t.Fatalf("request %d: mid-stream hang-up without a stream", i)
		}
	}
}

// Every shape feature and every malformed kind occurs, at about the rates
// asked for.
func TestPlanCoverage(t *testing.T) {
	c := testPlanConfig()
	const n = 5000
	features := map[string]int{}
	kinds := map[string]int{}
	hangups := map[Hangup]int{}
	for i := range n {
		r := planRequest(c, i)
		if r.Malformed != "" {
			kinds[r.Malformed]++
			continue
		}
		hangups[r.Hangup]++
		for _, f := range strings.Fields(r.Shape) {
			if strings.HasPrefix(f, "n=") {
				f = "n>1"
			}
			features[f]++
		}
	}
	for _, f := range []string{"completions", "chat", "stream", "n>1", "beam", "best_of>n", "prompt_logprobs",
		"logprobs", "stop", "priority", "prompt-list"} {
		if features[f] == 0 {
			t.Errorf("no request with %s", f)
		}
	}
	for _, k := range malformedKinds {
		if kinds[k.name] == 0 {
			t.Errorf("no malformed request of kind %s", k.name)
		}
	}
	malformed := n - hangups[NoHangup] - hangups[HangupEarly] - hangups[HangupMidStream]
	near := func(what string, got int, rate float64) {
		if want := rate * n; math.Abs(float64(got)-want) > 0.2*want {
			t.Errorf("%s: %d of %d, want about %.0f", what, got, n, want)
		}
	}
	near("malformed", malformed, c.MalformedRate)
	near("hang-ups", hangups[HangupEarly]+hangups[HangupMidStream], c.HangupRate)
	if hangups[HangupMidStream] < hangups[HangupEarly]/4 {
		t.Errorf("hang-ups: %d early, %d mid-stream", hangups[HangupEarly], hangups[HangupMidStream])
	}
}

// Each malformed kind carries its defect.
func TestPlanMalformedBodies(t *testing.T) {
	c := testPlanConfig()
	c.MalformedRate, c.HangupRate = 1, 0
	seen := map[string]bool{}
	for i := 0; len(seen) < len(malformedKinds) && i < 5000; i++ {
		r := planRequest(c, i)
		seen[r.Malformed] = true
		if r.Hangup != NoHangup || r.Malformed == "" {
			t.Fatalf("request %d: %+v", i, r)
		}
		var m map[string]any
		valid := json.Unmarshal(r.Body, &m) == nil
		b := string(r.Body)
		ok := true
		switch r.Malformed {
		case "truncated-json", "not-json", "empty-body":
			ok = !json.Valid(r.Body)
		case "json-array":
			ok = b == "[]"
		case "huge-max-tokens":
			ok = strings.Contains(b, `"max_tokens":9223372036854775807`)
		case "empty-prompt":
			ok = valid && m["prompt"] == "" && r.Endpoint == CompletionsPath
		case "negative-n":
			ok = valid && m["n"] == -1.0
		case "wrong-type-max-tokens":
			ok = valid && m["max_tokens"] == "ten"
		case "unknown-field":
			ok = valid && m["frobnicate"] != nil && r.MayAccept
		case "empty-messages", "bad-role":
			ok = valid && r.Endpoint == ChatPath
		case "content-length-stall":
			ok = r.Raw != nil && r.Raw.ContentLength > int64(len(r.Raw.Body))
		case "content-length-huge":
			ok = r.Raw != nil && r.Raw.ContentLength >= 1<<40
		default:
			ok = valid && !r.MayAccept
		}
		if !ok {
			t.Errorf("request %d of kind %s: %q (raw %+v)", i, r.Malformed, b, r.Raw)
		}
	}
	if len(seen) != len(malformedKinds) {
		t.Fatalf("saw %d of %d kinds", len(seen), len(malformedKinds))
	}
}

func TestPlanConfigValidate(t *testing.T) {
	good := testPlanConfig()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mod := range []func(*PlanConfig){
		func(c *PlanConfig) { c.HangupRate, c.MalformedRate = 0.7, 0.4 },
		func(c *PlanConfig) { c.HangupRate = -0.1 },
		func(c *PlanConfig) { c.MaxTokens = 0 },
		func(c *PlanConfig) { c.MaxPromptWords = 0 },
		func(c *PlanConfig) { c.Endpoints = nil },
		func(c *PlanConfig) { c.Endpoints = []string{"/v1/audio/speech"} },
	} {
		c := testPlanConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
