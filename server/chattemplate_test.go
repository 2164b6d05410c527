package server

import (
	"bytes"
	"log"
	"net/http"
	"strings"
	"testing"

	"pagoda/engine"
	"pagoda/internal/testmodel"
)

// loopTemplate never finishes without the render budget.
const loopTemplate = "{% for i in range(10**12) %}{{ i }}{% endfor %}"

// A chat template that exceeds its limits on the probe conversation stops the server from
// starting, naming where it came from; with ChatTemplateFallback it is replaced by ChatML with a
// warning. A template that exceeds them only on some requests answers those with a 400.
func TestChatTemplateBudgetAtStartup(t *testing.T) {
	cfg := engine.DefaultConfig(testmodel.Stories(t))
	cfg.MaxModelLen, cfg.Threads = 256, 1
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = New(Options{ChatTemplate: loopTemplate}).SetEngine(e)
	if err == nil || !strings.Contains(err.Error(), "--chat-template") || !strings.Contains(err.Error(), "limit") ||
		!strings.Contains(err.Error(), "line 1") {
		t.Fatalf("SetEngine with a looping template: %v", err)
	}
	t.Logf("refused: %v", err)
	var logs bytes.Buffer
	s := New(Options{ChatTemplate: loopTemplate, ChatTemplateFallback: true, Logger: log.New(&logs, "", 0)})
	if err := s.SetEngine(e); err != nil {
		t.Fatalf("with the fallback: %v", err)
	}
	if !strings.Contains(logs.String(), "WARNING") || !strings.Contains(logs.String(), "ChatML") {
		t.Fatalf("no warning: %s", logs.String())
	}
	url := newPlainServer(t, s)
	code, body := post(t, url+"/tokenize", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if code != http.StatusOK {
		t.Fatalf("tokenize with the fallback template: %d %s", code, body)
	}
}

func TestChatTemplateBudgetPerRequest(t *testing.T) {
	tmpl := "{% if big %}{% for i in range(10**12) %}{% endfor %}{% endif %}" + testTemplate
	ts := newTestServer(t, nil, Options{ChatTemplate: tmpl})
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	code, body := post(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1,
		"chat_template_kwargs": map[string]any{"big": true}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "limit") {
		t.Fatalf("a request past the template's limits: %d %s", code, body)
	}
	code, body = post(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1})
	if code != http.StatusOK {
		t.Fatalf("a plain request: %d %s", code, body)
	}
}
