package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client sends benchmark requests to an OpenAI-compatible server. Requests
// stream (stream_options.include_usage asks for the token counts); greedy
// (temperature 0), as vLLM's benchmark does.
type Client struct {
	BaseURL   string // e.g. http://127.0.0.1:8000
	Endpoint  string // /v1/completions or /v1/chat/completions
	Model     string
	APIKey    string // sent as a bearer token when set
	IgnoreEOS bool   // ask the server to generate exactly max_tokens (vLLM, llama.cpp)
	HTTP      *http.Client
}

// Chat reports whether the endpoint is a chat endpoint.
func (c *Client) Chat() bool { return strings.Contains(c.Endpoint, "chat") }

// Result is the outcome of one request.
type Result struct {
	Success bool
	Error   string
	// PromptTokens and OutputTokens are the server's usage counts, or the
	// dataset's estimate and the number of text chunks when it sent none.
	PromptTokens, OutputTokens int
	UsageReported              bool
	Start                      time.Time
	TTFT, Latency              time.Duration
	ITL                        []time.Duration // gaps between text chunks after the first
	Text                       string
	// Retries is 1 when the request was sent again because the server had
	// closed the idle connection it first went out on (see Send).
	Retries int
}

// body is the JSON request for p.
func (c *Client) body(p Prompt) ([]byte, error) {
	req := map[string]any{"model": c.Model, "temperature": 0, "stream": true,
		"stream_options": map[string]bool{"include_usage": true}}
	if c.IgnoreEOS {
		req["ignore_eos"] = true
	}
	if c.Chat() {
		req["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
		req["max_completion_tokens"] = p.OutputLen
	} else {
		req["prompt"] = p.Text
		req["max_tokens"] = p.OutputLen
	}
	return json.Marshal(req)
}

// Send runs one request and times its chunks. A request that failed
// because the server had closed its idle keep-alive connection just before
// the request went out (Go's "server closed idle connection") never reached
// the server: it is sent once more, on a new connection, and counted in
// Result.Retries; the times are those of the attempt that ran.
func (c *Client) Send(ctx context.Context, p Prompt) Result {
	b, err := c.body(p)
	if err != nil {
		return Result{PromptTokens: p.InputLen, Start: time.Now(), Error: err.Error()}
	}
	res, transportErr := c.attempt(ctx, p, b)
	if transportErr != nil && closedIdle(transportErr) && ctx.Err() == nil {
		res, _ = c.attempt(ctx, p, b)
		res.Retries = 1
	}
	return res
}

// closedIdle reports whether err is Go's transport error for a request
// written to a keep-alive connection the server had already closed (the
// error is unexported: it is known by its text).
func closedIdle(err error) bool {
	return strings.Contains(err.Error(), "server closed idle connection")
}

// attempt sends the request body b once; transportErr is the error of
// http.Client.Do, when that is how it failed.
func (c *Client) attempt(ctx context.Context, p Prompt, b []byte) (res Result, transportErr error) {
	res = Result{PromptTokens: p.InputLen, Start: time.Now()}
	req, err := newAPIRequest(ctx, "POST", strings.TrimRight(c.BaseURL, "/")+c.Endpoint, c.APIKey, b)
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		res.Error = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return res, nil
	}
	if err := c.read(resp.Body, &res); err != nil {
		res.Error = err.Error()
		return res, nil
	}
	res.Latency = time.Since(res.Start)
	res.Success = true
	return res, nil
}

// newAPIRequest is a request to an OpenAI-compatible server: a GET, or a
// POST of the JSON body, with apiKey as a bearer token when set.
func newAPIRequest(ctx context.Context, method, url, apiKey string, body []byte) (*http.Request, error) {
	r := io.Reader(nil)
	if method == "POST" {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	return req, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// chunk is the part of a streamed completion or chat chunk the benchmark reads.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// read consumes the SSE stream: the first chunk with text sets TTFT, each
// later one adds an inter-token latency; usage comes with the last chunk.
func (c *Client) read(body io.Reader, res *Result) error {
	sse := newSSEStream(body, true)
	var text strings.Builder
	last, chunks := time.Time{}, 0
	for {
		data, err := sse.next()
		if err == errSSEDone {
			break
		}
		if err == io.EOF {
			return errors.New("the stream ended without [DONE]")
		}
		if err != nil {
			return err
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return fmt.Errorf("bad chunk %q: %v", data, err)
		}
		if ch.Error != nil {
			return errors.New("server error: " + ch.Error.Message)
		}
		if ch.Usage != nil {
			res.PromptTokens, res.OutputTokens, res.UsageReported = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, true
		}
		for _, choice := range ch.Choices {
			s := choice.Text + choice.Delta.Content
			if s == "" {
				continue
			}
			now := time.Now()
			if chunks == 0 {
				res.TTFT = now.Sub(res.Start)
			} else {
				res.ITL = append(res.ITL, now.Sub(last))
			}
			last, chunks = now, chunks+1
			text.WriteString(s)
		}
	}
	res.Text = text.String()
	if !res.UsageReported {
		res.OutputTokens = chunks
	}
	if chunks == 0 {
		return errors.New("the response had no text")
	}
	return nil
}

// FetchModel returns the first model id of GET /v1/models.
func FetchModel(ctx context.Context, hc *http.Client, baseURL, apiKey string) (string, error) {
	req, err := newAPIRequest(ctx, "GET", strings.TrimRight(baseURL, "/")+"/v1/models", apiKey, nil)
	if err != nil {
		return "", err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /v1/models: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models: no model listed (%v)", err)
	}
	return list.Data[0].ID, nil
}
