package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// ollamaLines posts body and returns the NDJSON lines of the answer.
func ollamaLines(t *testing.T, url string, body any) []map[string]any {
	t.Helper()
	resp := do(t, context.Background(), "POST", url, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// /api/chat streams the chat completion's text as NDJSON lines, the same
// text as /v1/chat/completions, and ends with done, the reason, the counts
// and the durations; stream false answers the same in one object.
func TestOllamaChat(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	msgs := []map[string]any{{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Once upon a time"}}
	var want chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 12, "temperature": 0}, &want)
	body := map[string]any{"model": "stories260K:latest", "messages": msgs,
		"options": map[string]any{"num_predict": 12, "temperature": 0, "seed": 1, "top_k": 40, "num_thread": 4}, "keep_alive": "5m"}
	lines := ollamaLines(t, ts.url+"/api/chat", body)
	var text strings.Builder
	for _, l := range lines[:len(lines)-1] {
		m := l["message"].(map[string]any)
		if l["done"] != false || m["role"] != "assistant" || l["model"] != "stories260K" || l["created_at"] == "" {
			t.Fatalf("line %v", l)
		}
		text.WriteString(m["content"].(string))
	}
	last := lines[len(lines)-1]
	if text.String() != *want.Choices[0].Message.Content {
		t.Errorf("streamed %q, chat completions gave %q", text.String(), *want.Choices[0].Message.Content)
	}
	if last["done"] != true || last["done_reason"] != *want.Choices[0].FinishReason ||
		last["prompt_eval_count"] != float64(want.Usage.PromptTokens) || last["eval_count"] != float64(want.Usage.CompletionTokens) {
		t.Errorf("final line %v, usage %+v", last, want.Usage)
	}
	for _, k := range []string{"total_duration", "load_duration", "prompt_eval_duration", "eval_duration"} {
		if _, ok := last[k].(float64); !ok {
			t.Errorf("final line has no %s: %v", k, last)
		}
	}
	body["stream"] = false
	var one map[string]any
	postOK(t, ts.url+"/api/chat", body, &one)
	if m := one["message"].(map[string]any); m["content"] != text.String() || one["done"] != true || one["eval_count"] != last["eval_count"] {
		t.Errorf("stream false: %v", one)
	}
	// No messages: Ollama's way of loading a model.
	postOK(t, ts.url+"/api/chat", map[string]any{"model": "stories260K"}, &one)
	if one["done_reason"] != "load" {
		t.Errorf("no messages: %v", one)
	}
}

// /api/generate: the prompt through the template (or raw), the whole
// context returned, and that context continuing the next request.
func TestOllamaGenerate(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	tok := ts.e.Tokenizer()
	raw := "Once upon a time"
	ids := tok.Encode(raw, true, true)
	want := greedy(t, ts.e, ids, 8, nil)
	var resp map[string]any
	postOK(t, ts.url+"/api/generate", map[string]any{"model": "stories260K", "prompt": raw, "raw": true, "stream": false,
		"options": map[string]any{"num_predict": 8, "temperature": 0}}, &resp)
	if resp["response"] != want.Text || resp["done"] != true {
		t.Fatalf("raw generate %v, want %q", resp, want.Text)
	}
	var ctx []int32
	b, _ := json.Marshal(resp["context"])
	json.Unmarshal(b, &ctx)
	if !slices.Equal(ctx, append(slices.Clone(ids), want.TokenIDs...)) {
		t.Fatalf("context %v, want the prompt and output ids", ctx)
	}
	// The context continues: the same as the whole text as one prompt.
	next := append(slices.Clone(ctx), tok.Encode(" The end", false, true)...)
	want2 := greedy(t, ts.e, next, 6, nil)
	lines := ollamaLines(t, ts.url+"/api/generate", map[string]any{"model": "stories260K", "prompt": " The end", "raw": true,
		"context": ctx, "options": map[string]any{"num_predict": 6, "temperature": 0}})
	var text strings.Builder
	for _, l := range lines {
		text.WriteString(l["response"].(string))
	}
	if text.String() != want2.Text || lines[len(lines)-1]["prompt_eval_count"] != float64(len(next)) {
		t.Fatalf("continued %q (final %v), want %q", text.String(), lines[len(lines)-1], want2.Text)
	}
	// Templated (system + user), as a chat request renders it.
	rendered := tok.Encode("<s>system: Be brief.\nuser: Hi\nassistant:", false, true)
	want3 := greedy(t, ts.e, rendered, 5, nil)
	postOK(t, ts.url+"/api/generate", map[string]any{"model": "stories260K", "prompt": "Hi", "system": "Be brief.", "stream": false,
		"options": map[string]any{"num_predict": 5, "temperature": 0}}, &resp)
	if resp["response"] != want3.Text || resp["prompt_eval_count"] != float64(len(rendered)) {
		t.Fatalf("templated generate %v, want %q", resp, want3.Text)
	}
}

// format "json" and a schema constrain the output through the grammar
// engine; num_ctx bounds prompt + output; the errors take Ollama's shape.
func TestOllamaFormatAndErrors(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required": []string{"n"}, "additionalProperties": false}
	var resp map[string]any
	postOK(t, ts.url+"/api/chat", map[string]any{"model": "stories260K", "stream": false, "format": schema,
		"messages": []map[string]any{{"role": "user", "content": "a number"}}, "options": map[string]any{"num_predict": 40}}, &resp)
	var got struct {
		N *int `json:"n"`
	}
	content := resp["message"].(map[string]any)["content"].(string)
	if resp["done_reason"] == "stop" {
		if err := json.Unmarshal([]byte(content), &got); err != nil || got.N == nil {
			t.Errorf("format schema: %q is not the schema's object (%v)", content, err)
		}
	} else if !strings.HasPrefix(content, `{`) {
		t.Errorf("format schema: %q does not start the object", content)
	}
	postOK(t, ts.url+"/api/generate", map[string]any{"model": "stories260K", "prompt": "x", "stream": false, "format": "json",
		"options": map[string]any{"num_predict": 8}}, &resp)
	if !strings.HasPrefix(strings.TrimSpace(resp["response"].(string)), "{") {
		t.Errorf("format json: %q", resp["response"])
	}
	postOK(t, ts.url+"/api/generate", map[string]any{"model": "stories260K", "prompt": "Once upon a time", "raw": true, "stream": false,
		"options": map[string]any{"num_ctx": 10, "temperature": 0}}, &resp)
	if resp["prompt_eval_count"].(float64)+resp["eval_count"].(float64) > 10 || resp["done_reason"] != "length" {
		t.Errorf("num_ctx 10: %v", resp)
	}
	for _, c := range []struct {
		path   string
		body   map[string]any
		status int
		want   string
	}{
		{"/api/chat", map[string]any{"model": "nope", "messages": []any{}}, 404, "does not exist"},
		{"/api/chat", map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": "x"}},
			"options": map[string]any{"mirostat": 2}}, 400, "mirostat"},
		{"/api/chat", map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": "x"}},
			"options": map[string]any{"num_ctx": 100000}}, 400, "num_ctx"},
		{"/api/chat", map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": "x"}},
			"options": map[string]any{"bogus": 1}}, 400, `unknown field \"options.bogus\"`},
		{"/api/chat", map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": "x"}},
			"think": true}, 400, "does not support thinking"},
		{"/api/generate", map[string]any{"model": "stories260K", "prompt": "x", "format": "yaml"}, 400, "format"},
		{"/api/generate", map[string]any{"model": "stories260K", "prompt": "x", "images": []string{"aGk="}}, 400, "images"},
		{"/api/embed", map[string]any{"model": "stories260K", "input": 3}, 400, "input"},
	} {
		status, b := post(t, ts.url+c.path, c.body)
		var e struct {
			Error string `json:"error"`
		}
		if status != c.status || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, strings.ReplaceAll(c.want, `\"`, `"`)) {
			t.Errorf("%s %v: %d %s, want %d with %q", c.path, c.body, status, b, c.status, c.want)
		}
	}
	waitFor(t, 5e9, "the engine to be idle", func() bool { return idle(ts.e) })
}

// tags, ps, show and version describe the served model; pull of a served
// name succeeds at once, of another goes through Options.Pull.
func TestOllamaModels(t *testing.T) {
	var pulled []string
	ts := newTestServer(t, nil, Options{ServedModelNames: []string{"stories", "tiny"},
		Pull: func(_ context.Context, ref string, progress io.Writer) error {
			pulled = append(pulled, ref)
			fmt.Fprintf(progress, "downloading %s 50%%\rdownloading %s 100%%\n", ref, ref)
			if ref == "bad/ref" {
				return fmt.Errorf("no such repo")
			}
			return nil
		}})
	var tags, ps struct {
		Models []ollamaModel `json:"models"`
	}
	getJSON(t, ts.url+"/api/tags", &tags)
	getJSON(t, ts.url+"/api/ps", &ps)
	if len(tags.Models) != 2 || tags.Models[0].Name != "stories" || tags.Models[0].Details.Format != "gguf" ||
		tags.Models[0].Details.Family != "llama" || tags.Models[0].Size == 0 || len(tags.Models[0].Digest) != 64 {
		t.Errorf("tags: %+v", tags)
	}
	if len(ps.Models) != 2 || ps.Models[1].Model != "tiny" || ps.Models[1].ContextLength != 512 || ps.Models[1].ExpiresAt == "" {
		t.Errorf("ps: %+v", ps)
	}
	var show map[string]any
	postOK(t, ts.url+"/api/show", map[string]any{"model": "tiny:latest"}, &show)
	info := show["model_info"].(map[string]any)
	if info["general.architecture"] != "llama" || info["llama.embedding_length"] == nil || show["capabilities"] == nil {
		t.Errorf("show: %v", show)
	}
	var v map[string]string
	getJSON(t, ts.url+"/api/version", &v)
	if v["version"] != OllamaVersion {
		t.Errorf("version: %v", v)
	}
	lines := ollamaLines(t, ts.url+"/api/pull", map[string]any{"model": "stories"})
	if len(pulled) != 0 || lines[len(lines)-1]["status"] != "success" {
		t.Errorf("pull of a served name: %v (pulled %v)", lines, pulled)
	}
	lines = ollamaLines(t, ts.url+"/api/pull", map[string]any{"model": "org/repo:Q4_K_M"})
	var statuses []string
	for _, l := range lines {
		statuses = append(statuses, l["status"].(string))
	}
	if want := []string{"pulling manifest", "downloading org/repo:Q4_K_M 50%", "downloading org/repo:Q4_K_M 100%", "success"}; !slices.Equal(statuses, want) {
		t.Errorf("pull statuses %q, want %q", statuses, want)
	}
	lines = ollamaLines(t, ts.url+"/api/pull", map[string]any{"model": "bad/ref"})
	if last := lines[len(lines)-1]; !strings.Contains(fmt.Sprint(last["error"]), "no such repo") {
		t.Errorf("failed pull: %v", lines)
	}
	status, b := post(t, ts.url+"/api/pull", map[string]any{"model": "bad/ref", "stream": false})
	if status != 400 || !strings.Contains(string(b), "no such repo") {
		t.Errorf("failed pull without stream: %d %s", status, b)
	}
}

// The chat page is served at GET / with no external reference.
func TestChatPage(t *testing.T) {
	ts := newTestServer(t, nil, Options{APIKey: "k"})
	resp := do(t, context.Background(), "GET", ts.url+"/", nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(b), "/v1/chat/completions") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, ext := range []string{"http://", "https://", "//cdn", "src=\"http"} {
		if i := strings.Index(string(b), ext); i >= 0 && !strings.Contains(string(b[i:min(len(b), i+40)]), "https?:") {
			t.Errorf("the page refers to an external resource: %q", b[i:min(len(b), i+60)])
		}
	}
	if resp := do(t, context.Background(), "GET", ts.url+"/nothing", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %d", resp.StatusCode)
	}
}
