package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Outcome is how a soak request ended. Every request sent has exactly one.
type Outcome int

const (
	// Completed: a full response (JSON or a stream ending in [DONE]) whose
	// every choice has a finish_reason (for the other protocols, their own
	// complete answer: soak_protocols.go).
	Completed Outcome = iota
	// Aborted: the client hung up (planned hang-ups, and raw requests whose
	// server was still reading the body at the stall timeout).
	Aborted
	// Rejected: an error response the request may get: 4xx, or 503 (queue
	// full, shutting down) for a well-formed one.
	Rejected
	// Lost: anything else, e.g. a connection reset by the server, a
	// timeout, a stream cut before [DONE] or without a finish_reason, a
	// 5xx, a response that is not what was asked.
	Lost
)

func (o Outcome) String() string {
	return [...]string{"completed", "aborted", "rejected", "lost"}[o]
}

// soakResult is the outcome of one request.
type soakResult struct {
	Outcome Outcome
	Status  int    // HTTP status, 0 when none came
	Reason  string // why it was rejected or lost; for aborted, the phase of the hang-up
	// ServerError marks a 5xx status or a server_error event in a stream.
	ServerError bool
	// Accepted marks a malformed request the server answered 2xx although
	// it must refuse it.
	Accepted bool
	Latency  time.Duration
	TTFC     time.Duration // time to the first streamed chunk with choices
}

// errHangup is the cancel cause of a planned hang-up.
var errHangup = errors.New("client hang-up")

// Abort phases: where the client was when it hung up.
const (
	phaseBeforeResponse = "before response headers"
	phaseReadingBody    = "reading the JSON body"
	phaseBeforeChunk    = "stream before first chunk"
	phaseMidStream      = "mid-stream"
	phaseStalled        = "stalled body, no answer"
)

// sendHTTP sends a request with a JSON body and classifies its outcome. An
// early hang-up cancels the request delay after sending.
func (s *soaker) sendHTTP(ctx context.Context, req soakRequest, delay time.Duration) soakResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if req.Hangup == HangupEarly {
		t := time.AfterFunc(delay, func() { cancel(errHangup) })
		defer t.Stop()
	}
	start := time.Now()
	hr, err := newAPIRequest(ctx, "POST", s.base+req.Endpoint, s.cfg.APIKey, req.Body)
	if err != nil {
		return soakResult{Outcome: Lost, Reason: err.Error()}
	}
	resp, err := s.hc.Do(hr)
	if err != nil {
		return failed(ctx, err, phaseBeforeResponse)
	}
	defer resp.Body.Close()
	res := s.classify(ctx, req, resp, cancel, start)
	res.Status = resp.StatusCode
	if res.Outcome == Completed {
		res.Latency = time.Since(start)
	}
	return res
}

// failed classifies an error: a hang-up of ours is Aborted at phase,
// anything else is Lost.
func failed(ctx context.Context, err error, phase string) soakResult {
	if context.Cause(ctx) == errHangup {
		return soakResult{Outcome: Aborted, Reason: phase}
	}
	if c := context.Cause(ctx); c != nil && c != context.Canceled {
		err = c
	}
	return soakResult{Outcome: Lost, Reason: err.Error()}
}

// classify reads a response: error statuses by their class, 200 by its
// body (a stream or JSON).
func (s *soaker) classify(ctx context.Context, req soakRequest, resp *http.Response, cancel context.CancelCauseFunc,
	start time.Time) soakResult {
	code := resp.StatusCode
	switch {
	case code >= 500 && code != http.StatusServiceUnavailable:
		return soakResult{Outcome: Lost, ServerError: true, Reason: errorReason(resp)}
	case code == http.StatusServiceUnavailable, code >= 400 && code < 500:
		return soakResult{Outcome: Rejected, Reason: errorReason(resp)}
	case code != http.StatusOK:
		return soakResult{Outcome: Lost, Reason: errorReason(resp)}
	}
	var res soakResult
	ct := resp.Header.Get("Content-Type")
	stream := strings.HasPrefix(ct, "text/event-stream") ||
		(req.Endpoint == OllamaChatPath && strings.HasPrefix(ct, "application/x-ndjson"))
	switch {
	case req.Malformed == "" && stream != req.Stream:
		return soakResult{Outcome: Lost, Reason: fmt.Sprintf("asked stream=%v, got Content-Type %q", req.Stream, ct)}
	case stream && isOpenAI(req.Endpoint):
		res = readStream(ctx, req, resp.Body, cancel, start)
	case stream:
		res = readProtocolStream(ctx, req, resp.Body, cancel, start)
	case isOpenAI(req.Endpoint):
		res = readJSON(ctx, req, resp.Body)
	default:
		res = readProtocolJSON(ctx, req, resp.Body)
	}
	if req.Malformed != "" && !req.MayAccept && res.Outcome != Rejected {
		res.Accepted = true
	}
	return res
}

// errorReason is the status and error message of an error response.
func errorReason(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	var ollama struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	} else if json.Unmarshal(b, &ollama) == nil && ollama.Error != "" {
		msg = ollama.Error
	}
	return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
}

// choiceEnds is the part of a response or chunk the soak checks.
type choiceEnds struct {
	Choices []struct {
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// readJSON checks a non-streamed response: req.Choices choices, each
// with a finish_reason.
func readJSON(ctx context.Context, req soakRequest, body io.Reader) soakResult {
	b, err := io.ReadAll(body)
	if err != nil {
		return failed(ctx, err, phaseReadingBody)
	}
	var r choiceEnds
	if err := json.Unmarshal(b, &r); err != nil {
		return soakResult{Outcome: Lost, Reason: fmt.Sprintf("bad JSON response: %v", err)}
	}
	finished := map[int]bool{}
	for _, c := range r.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			finished[c.Index] = true
		}
	}
	if len(r.Choices) != req.Choices || len(finished) != req.Choices {
		return soakResult{Outcome: Lost, Reason: fmt.Sprintf("response has %d choices, %d finished; want %d",
			len(r.Choices), len(finished), req.Choices)}
	}
	return soakResult{Outcome: Completed}
}
