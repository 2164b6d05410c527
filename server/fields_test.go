package server

import (
	"bytes"
	"log"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// syncWriter is a bytes.Buffer safe for the server's logger and the test.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// The fields the OpenAI SDKs and agent frameworks send: those that cannot
// change the output are accepted, ignored and logged at debug level; those
// that would and are not implemented are a 400 naming them.
func TestSDKFields(t *testing.T) {
	var logs syncWriter
	ts := newTestServer(t, nil, Options{Logger: log.New(&logs, "", 0)})
	neutral := map[string]any{"store": false, "metadata": map[string]string{"run": "42"}, "service_tier": "auto",
		"user": "u1", "modalities": []string{"text"}, "prompt_cache_key": "k", "prompt_cache_retention": "24h",
		"safety_identifier": "s", "reasoning_effort": "low"}
	chat := map[string]any{"messages": chatMessages, "max_tokens": 2}
	for k, v := range neutral {
		chat[k] = v
	}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", chat, &resp)
	want := "ignored fields that cannot change the output: metadata, modalities, prompt_cache_key, " +
		"prompt_cache_retention, safety_identifier, service_tier, store"
	if !strings.Contains(logs.String(), "DEBUG /v1/chat/completions request_id=") || !strings.Contains(logs.String(), want) {
		t.Errorf("log:\n%s\nwant a DEBUG line with %q", logs.String(), want)
	}
	for _, tc := range []struct {
		path  string
		field string
		value any
		want  string
	}{
		{"/v1/chat/completions", "store", true, "stored completions"},
		{"/v1/chat/completions", "modalities", []string{"text", "audio"}, "audio output"},
		{"/v1/chat/completions", "verbosity", "low", "shorter or longer"},
		{"/v1/chat/completions", "reasoning_effort", "extreme", "low, medium, high"},
		{"/v1/completions", "reasoning_effort", "low", "chat completions"},
		{"/v1/completions", "audio", map[string]string{"voice": "alloy"}, "audio output"},
	} {
		body := map[string]any{"messages": chatMessages, "prompt": "a", tc.field: tc.value}
		if tc.path == "/v1/completions" {
			delete(body, "messages")
		} else {
			delete(body, "prompt")
		}
		code, b := post(t, ts.url+tc.path, body)
		checkError(t, code, b, http.StatusBadRequest, tc.field, tc.want)
	}
	settle(t, ts)
}

// reasoning_effort is the chat template's variable reasoning_effort (as
// vLLM passes it); chat_template_kwargs win over it.
func TestReasoningEffortTemplate(t *testing.T) {
	tmpl := "{% if reasoning_effort is defined %}effort={{ reasoning_effort }}\n{% endif %}" + testTemplate
	ts := newTestServer(t, nil, Options{ChatTemplate: tmpl})
	b := ts.s.backend.Load()
	plain := ""
	for _, tc := range []struct {
		effort *string
		kwargs map[string]any
		want   string
	}{
		{nil, nil, ""},
		{ptr("high"), nil, "effort=high\n"},
		{ptr("high"), map[string]any{"reasoning_effort": "low"}, "effort=low\n"},
	} {
		p, aerr := b.chatPrompt(&chatRequest{Messages: []chatMessage{{Role: "user", Content: []byte(`"hi"`)}},
			ReasoningEffort: tc.effort, ChatTemplateKwargs: tc.kwargs})
		if aerr != nil {
			t.Fatal(aerr)
		}
		if tc.effort == nil {
			plain = p.text
		}
		if p.text != tc.want+plain || strings.Contains(plain, "effort") {
			t.Errorf("effort %v, kwargs %v: prompt %q, want %q", tc.effort, tc.kwargs, p.text, tc.want+plain)
		}
	}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 2, "reasoning_effort": "medium"}, &resp)
	settle(t, ts)
}

// Without --served-model-name the model answers to the reference the
// command line gave and to its file's name; /v1/models lists both and
// responses carry the reference.
func TestServedNamesFromReference(t *testing.T) {
	for _, tc := range []struct {
		names     []string
		ref, path string
		want      []string
	}{
		{nil, "smollm2", "/m/SmolLM2-135M-Instruct.Q4_1.gguf", []string{"smollm2", "SmolLM2-135M-Instruct.Q4_1"}},
		{nil, "org/repo:Q4_K_M", "/m/hf/org/repo/repo-Q4_K_M.gguf", []string{"org/repo:Q4_K_M", "repo-Q4_K_M"}},
		{nil, "./x/model.gguf", "./x/model.gguf", []string{"model", "./x/model.gguf"}},
		{nil, "model", "/m/model.gguf", []string{"model"}},
		{nil, "", "/m/model.gguf", []string{"model"}},
		{[]string{"a", "b"}, "smollm2", "/m/x.gguf", []string{"a", "b"}},
	} {
		if got := ServedNames(tc.names, tc.ref, tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("ServedNames(%q, %q, %q) = %q, want %q", tc.names, tc.ref, tc.path, got, tc.want)
		}
	}
	ts := newTestServer(t, nil, Options{ModelRef: "stories"})
	var list modelList
	getJSON(t, ts.url+"/v1/models", &list)
	if len(list.Data) != 2 || list.Data[0].ID != "stories" || list.Data[1].ID != "stories260K" {
		t.Fatalf("models %+v", list)
	}
	for _, name := range []string{"stories", "stories260K"} {
		var c completionResponse
		postOK(t, ts.url+"/v1/completions", map[string]any{"model": name, "prompt": onceUpon, "max_tokens": 2}, &c)
		if c.Model != "stories" {
			t.Errorf("model %q answered as %q", name, c.Model)
		}
	}
	settle(t, ts)
}
