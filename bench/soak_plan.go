package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Endpoint paths a soak sends to.
const (
	CompletionsPath = "/v1/completions"
	ChatPath        = "/v1/chat/completions"
)

// Hangup is how the client of a soak request hangs up.
type Hangup int

const (
	// NoHangup reads the response to its end.
	NoHangup Hangup = iota
	// HangupEarly cancels the request at a random moment while waiting for
	// the response: usually before its first byte (for a non-streamed
	// request, the whole time it is generating).
	HangupEarly
	// HangupMidStream cancels a streamed request after its first chunk and
	// HangupChunks more.
	HangupMidStream
)

func (h Hangup) String() string {
	return [...]string{"none", "early", "mid-stream"}[h]
}

// soakRequest is one planned request of a soak. Planning is deterministic:
// the same seed and index give the same request.
type soakRequest struct {
	Index    int
	Endpoint string // CompletionsPath, ChatPath or another protocol's (soak_protocols.go)
	Shape    string // what the request exercises, e.g. "completions stream n=2 logprobs"
	Body     []byte
	Stream   bool
	// Choices is the number of choices a complete response carries
	// (n × prompts), each with a finish_reason; for embeddings, the number
	// of inputs.
	Choices int

	// Malformed names the defect of a malformed request ("" when
	// well-formed); MayAccept is set when a server may accept it (an
	// unknown field: OpenAI ignores them). Raw requests go over a plain
	// connection (see malformed.go).
	Malformed string
	MayAccept bool
	Raw       *rawRequest

	Hangup Hangup
	// HangupAt is the fraction of the typical latency after which an early
	// hang-up cancels; HangupChunks the chunks read after the first before a
	// mid-stream one.
	HangupAt     float64
	HangupChunks int

	// Structured is the kind of its structured-output constraint
	// (soak_structured.go); "" for none.
	Structured string
}

// PlanConfig is what the planner needs of a soak's configuration.
type PlanConfig struct {
	Model          string
	Endpoints      []string // some of AllEndpoints
	MaxTokens      int      // max_tokens is drawn from [1, MaxTokens]
	MaxPromptWords int      // prompts have 1..MaxPromptWords words
	HangupRate     float64  // fraction of requests the client hangs up on
	MalformedRate  float64  // fraction of requests with a malformed body
	// StructuredRate and HeavyRate are the fractions of well-formed requests
	// constrained by light structured outputs (small schemas, choices,
	// regexes) and by heavy ones (soak_structured.go).
	StructuredRate float64
	HeavyRate      float64
	Seed           uint64
}

// Validate checks the rates and sizes.
func (c PlanConfig) Validate() error {
	switch {
	case c.HangupRate < 0 || c.MalformedRate < 0 || c.HangupRate+c.MalformedRate > 1:
		return fmt.Errorf("hang-up rate %v and malformed rate %v must be ≥ 0 and sum to ≤ 1", c.HangupRate, c.MalformedRate)
	case c.StructuredRate < 0 || c.HeavyRate < 0 || c.StructuredRate+c.HeavyRate > 1:
		return fmt.Errorf("structured rate %v and heavy rate %v must be ≥ 0 and sum to ≤ 1", c.StructuredRate, c.HeavyRate)
	case c.MaxTokens < 1:
		return fmt.Errorf("max tokens must be ≥ 1, got %d", c.MaxTokens)
	case c.MaxPromptWords < 1:
		return fmt.Errorf("max prompt words must be ≥ 1, got %d", c.MaxPromptWords)
	case len(c.Endpoints) == 0:
		return fmt.Errorf("no endpoint to send to")
	}
	for _, e := range c.Endpoints {
		if !slices.Contains(AllEndpoints, e) {
			return fmt.Errorf("unknown endpoint %q (want one of %s)", e, strings.Join(AllEndpoints, ", "))
		}
	}
	return nil
}

// planRequest draws request i: malformed with probability MalformedRate,
// otherwise a well-formed shape that the client hangs up on with
// probability HangupRate (split evenly between early and mid-stream
// hang-ups; a mid-stream one makes the request stream when its shape can).
func planRequest(c PlanConfig, i int) soakRequest {
	r := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	u := r.Float64()
	if u < c.MalformedRate {
		return planMalformed(c, r, i)
	}
	h := NoHangup
	if u < c.MalformedRate+c.HangupRate {
		h = HangupEarly + Hangup(r.IntN(2))
	}
	var req soakRequest
	if kind, sr := structuredKind(c, i); kind != "" {
		req = planStructured(c, sr, i, kind, h == HangupMidStream)
	} else {
		req = planShape(c, r, i, h == HangupMidStream)
	}
	if h == HangupMidStream && !req.Stream {
		h = HangupEarly // beam search, best_of > n, prompt_logprobs and embeddings do not stream
	}
	req.Hangup, req.HangupAt, req.HangupChunks = h, r.Float64()*1.5, r.IntN(4)
	return req
}

// shapeOpts are the well-formed request's draws.
type shapeOpts struct {
	chat, stream, beam, bestOf, promptLogprobs, logprobs, stop, priority, list bool
	n                                                                          int
}

// planShape draws a well-formed request mixing n, best_of (> n too), beam
// search, prompt_logprobs, logprobs, stop strings, streaming, priorities,
// both endpoints and prompt lists; or one to another protocol's endpoint
// (planProtocol).
func planShape(c PlanConfig, r *rand.Rand, i int, wantStream bool) soakRequest {
	ep := c.Endpoints[r.IntN(len(c.Endpoints))]
	if !isOpenAI(ep) {
		return planProtocol(c, r, i, ep, wantStream)
	}
	var o shapeOpts
	o.chat = ep == ChatPath
	o.n = []int{1, 1, 1, 2, 3}[r.IntN(5)]
	switch k := r.IntN(10); {
	case k < 2:
		o.beam = true
	case k < 4:
		o.bestOf = true
	}
	o.promptLogprobs = !o.chat && r.IntN(5) == 0
	canStream := !o.beam && !o.bestOf && !o.promptLogprobs
	o.stream = canStream && (wantStream || r.IntN(2) == 0)
	o.logprobs = r.IntN(3) == 0
	o.stop = r.IntN(3) == 0
	o.priority = r.IntN(4) == 0
	o.list = !o.chat && r.IntN(5) == 0

	body := map[string]any{"model": c.Model, "max_tokens": 1 + r.IntN(c.MaxTokens), "n": o.n}
	prompts := 1
	if o.chat {
		body["messages"] = chatMessages(r, c.MaxPromptWords)
	} else if o.list {
		prompts = 2 + r.IntN(2)
		list := make([]string, prompts)
		for j := range list {
			list[j] = promptText(r, c.MaxPromptWords)
		}
		body["prompt"] = list
	} else {
		body["prompt"] = promptText(r, c.MaxPromptWords)
	}
	setShapeFields(body, o, r)
	b, _ := json.Marshal(body) // maps of strings, numbers and lists always marshal
	endpoint := CompletionsPath
	if o.chat {
		endpoint = ChatPath
	}
	return soakRequest{Index: i, Endpoint: endpoint, Shape: o.name(), Body: b, Stream: o.stream, Choices: o.n * prompts}
}

// setShapeFields adds the sampling fields o asks for.
func setShapeFields(body map[string]any, o shapeOpts, r *rand.Rand) {
	switch {
	case o.beam:
		body["use_beam_search"], body["best_of"], body["temperature"] = true, max(2, o.n)+r.IntN(2), 0
	case o.bestOf:
		body["best_of"], body["temperature"], body["seed"] = o.n+1+r.IntN(2), 0.8, r.IntN(1000)
	default:
		body["temperature"] = []float64{0, 0.7, 1}[r.IntN(3)]
		body["seed"] = r.IntN(1000)
	}
	if o.stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	if o.promptLogprobs {
		body["prompt_logprobs"] = r.IntN(3)
	}
	if o.logprobs && o.chat {
		body["logprobs"], body["top_logprobs"] = true, r.IntN(3)
	} else if o.logprobs {
		body["logprobs"] = r.IntN(3)
	}
	if o.stop {
		body["stop"] = [][]string{{"."}, {" the", "!"}, {"\n"}}[r.IntN(3)]
	}
	if o.priority {
		body["priority"] = r.IntN(5) - 2
	}
}

func (o shapeOpts) name() string {
	parts := []string{"completions"}
	if o.chat {
		parts[0] = "chat"
	}
	add := func(on bool, s string) {
		if on {
			parts = append(parts, s)
		}
	}
	add(o.stream, "stream")
	add(o.n > 1, fmt.Sprintf("n=%d", o.n))
	add(o.beam, "beam")
	add(o.bestOf, "best_of>n")
	add(o.promptLogprobs, "prompt_logprobs")
	add(o.logprobs, "logprobs")
	add(o.stop, "stop")
	add(o.priority, "priority")
	add(o.list, "prompt-list")
	return strings.Join(parts, " ")
}

// soakWords make the prompts: common words of children's stories, so that
// small story models produce varied text.
var soakWords = strings.Fields(`once upon a time there was little girl named Lily she loved to play
with her big red ball in the park one day boy saw dog and cat they were happy friends went home mom said
sun was shining tree bird sang song fun jump run tall small house garden flower`)

func promptText(r *rand.Rand, maxWords int) string {
	n := 1 + r.IntN(maxWords)
	w := make([]string, n)
	for j := range w {
		w[j] = soakWords[r.IntN(len(soakWords))]
	}
	return strings.Join(w, " ")
}

// chatMessages is a user message, sometimes after a system message.
func chatMessages(r *rand.Rand, maxWords int) []map[string]string {
	msgs := []map[string]string{{"role": "user", "content": promptText(r, maxWords)}}
	if r.IntN(3) == 0 {
		msgs = append([]map[string]string{{"role": "system", "content": promptText(r, maxWords)}}, msgs...)
	}
	return msgs
}
