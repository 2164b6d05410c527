package e2e

import (
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pagoda/internal/testmodel"
)

// TestChatPage drives the chat page at GET / in a real headless chromium
// (Debian's chromium and chromedriver, through WebDriver) against `pagoda
// serve smollm2` serving the model under two names: it picks the second
// name, gives a system prompt, types a message and sees the answer stream
// in (the answer grows while Stop is enabled, and the request carried the
// model, system prompt and stream), copies the answer to the clipboard,
// stops a long reply (the server's running gauge returns to 0), renders a
// reply with reasoning and markdown streamed in awkward pieces (reasoning
// folded, markup escaped), and starts a new chat. The screenshots are kept
// as artifacts: under -artifacts in the test's artifact directory, else in
// $TMPDIR/pagoda-e2e-artifacts; the log names them.
func TestChatPage(t *testing.T) {
	testmodel.Default(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", "smollm2", "--port", strconv.Itoa(port),
		"--served-model-name", "smollm2", "assistant", "--max-model-len", "1024", "--max-num-seqs", "4"))
	waitHealthy(t, base, srv)
	shots := artifactDir(t)
	b := startBrowser(t)
	b.open(base + "/")
	for _, perm := range []string{"clipboard-read", "clipboard-write"} { // for the page's origin
		b.cmd("POST", "/permissions", map[string]any{"descriptor": map[string]string{"name": perm}, "state": "granted"}, nil)
	}
	b.waitFor("the model picker to list both names", 30*time.Second,
		`return [...document.querySelectorAll("#model option")].map(o => o.value).join(",") === "smollm2,assistant"`)
	for _, id := range []string{"model", "system", "input", "send", "stop", "clear", "maxTokens", "apiKey"} {
		b.find("#" + id)
	}
	var stopDisabled bool
	if b.eval(&stopDisabled, `return document.getElementById("stop").disabled`); !stopDisabled {
		t.Error("Stop is enabled with no reply running")
	}
	b.click(`#model option[value="assistant"]`)
	b.click("#sysbox summary")
	b.typeInto("#system", "You are a helpful assistant. Answer in one sentence.")
	b.eval(nil, `const m = document.getElementById("maxTokens"); m.value = "48"; m.dispatchEvent(new Event("change"));`)
	// Record the requests the page sends, and every state of the answer.
	// Each request is sent on with min_tokens 8, so that a sampled answer
	// of a word or two (the system prompt asks for one sentence) still
	// streams in several pieces.
	b.eval(nil, `
		window.__requests = [];
		const realFetch = window.fetch;
		window.fetch = (url, opts) => {
			if (opts && opts.body) {
				const body = JSON.parse(opts.body);
				window.__requests.push(body);
				opts = { ...opts, body: JSON.stringify({ ...body, min_tokens: 8 }) };
			}
			return realFetch(url, opts);
		};
		window.__states = [];
		new MutationObserver(() => {
			const a = document.querySelector(".msg.assistant:last-of-type .answer");
			if (a) window.__states.push({ text: a.textContent, streaming: !document.getElementById("stop").disabled });
		}).observe(document.getElementById("log"), { childList: true, subtree: true, characterData: true });`)

	b.typeInto("#input", "What is the capital of France?\ue007")
	waitDone(t, b, 2*time.Minute)
	var got struct {
		Answer, Stats, Copy string
		Streamed, States    int
		Request             struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
	}
	b.eval(&got, `
		const last = document.querySelector(".msg.assistant:last-of-type");
		return { Answer: last.querySelector(".answer").textContent, Stats: last.querySelector(".stats").textContent,
			Streamed: window.__states.filter(s => s.streaming && s.text !== "").length, States: window.__states.length,
			Request: window.__requests[window.__requests.length - 1] };`)
	t.Logf("answer %q (%s); %d states of the answer seen while streaming", got.Answer, got.Stats, got.Streamed)
	shot := filepath.Join(shots, "chatpage-answer.png")
	b.screenshot(shot)
	t.Logf("screenshot: %s", shot)
	switch r := got.Request; {
	case strings.TrimSpace(got.Answer) == "":
		t.Fatalf("no answer appeared (stats %q)", got.Stats)
	case got.Streamed < 2:
		t.Errorf("the answer did not stream: %d states of it seen while Stop was enabled", got.Streamed)
	case !regexp.MustCompile(`^(stop|length) · first token [0-9.]+ s · [0-9]+ tokens · [0-9.]+ tok/s · [0-9.]+ s$`).MatchString(got.Stats):
		t.Errorf("stats line %q", got.Stats)
	case r.Model != "assistant" || !r.Stream || len(r.Messages) != 2 || r.Messages[0].Role != "system" ||
		!strings.HasPrefix(r.Messages[0].Content, "You are a helpful") || r.Messages[1].Content != "What is the capital of France?":
		t.Errorf("the page sent %+v", r)
	}

	// Copy: the button puts the answer's markdown on the clipboard.
	b.click(".msg.assistant:last-of-type .copy")
	b.waitFor("the copy button to say copied", 10*time.Second,
		`return document.querySelector(".msg.assistant:last-of-type .copy").textContent === "copied"`)
	var clip, text string
	b.evalAsync(&clip, `const done = arguments[0]; navigator.clipboard.readText().then(done, e => done("error: " + e));`)
	b.eval(&text, `return history[history.length - 1].content`)
	if clip != text || text == "" {
		t.Errorf("clipboard %q, answer %q", clip, text)
	}

	// Stop: a long reply stops at once; the server aborts it. The request
	// gets ignore_eos, so a sampled early end of text cannot finish the
	// reply before Stop is clicked.
	b.eval(nil, `
		document.getElementById("maxTokens").value = "800";
		const sendFetch = window.fetch;
		window.fetch = (url, opts) => {
			if (opts && opts.body) opts = { ...opts, body: JSON.stringify({ ...JSON.parse(opts.body), ignore_eos: true }) };
			return sendFetch(url, opts);
		};`)
	b.typeInto("#input", "Write a very long story about a dragon who learns to bake bread.\ue007")
	b.waitFor("the long reply to start", time.Minute,
		`return document.querySelectorAll(".msg.assistant").length === 2 && !document.getElementById("stop").disabled &&
			document.querySelector(".msg.assistant:last-of-type .answer").textContent.length > 20`)
	b.click("#stop")
	waitDone(t, b, 10*time.Second)
	var stats string
	b.eval(&stats, `return document.querySelector(".msg.assistant:last-of-type .stats").textContent`)
	if !strings.HasPrefix(stats, "stopped · ") {
		t.Errorf("stopped reply's stats %q", stats)
	}
	waitIdle(t, base)

	// A thinking model's reply, streamed in awkward pieces (events split
	// across reads, CRLF line ends): reasoning folded, markdown rendered,
	// markup escaped.
	b.eval(nil, `
		const pieces = [
			'data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me think"}}]}\r\n\r\ndata: {"choi',
			'ces":[{"index":0,"delta":{"reasoning_content":" about it."}}]}\n\n',
			'data: {"choices":[{"index":0,"delta":{"content":"**Paris** is *the* capital; 2 * 3 * 4 = 24.\\n\\n"}}]}\n\n',
			'data: {"choices":[{"index":0,"delta":{"content":"`+"```go\\\\nx := 1 < 2\\\\n```"+`\\n- one\\n- two\\n\\n"}}]}\n\n',
			'data: {"choices":[{"index":0,"delta":{"content":"> quoted <script>window.__pwned = 1</script>\\n\\n[a link](https://example.org)"},"finish_reason":"stop"}]}\n\n',
			'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}\n\ndata: [DONE]\n\n'];
		const realFetch = window.fetch;
		window.fetch = (url, opts) => {
			if (!String(url).endsWith("/v1/chat/completions")) return realFetch(url, opts);
			const enc = new TextEncoder();
			const body = new ReadableStream({ async start(c) {
				for (const p of pieces) { c.enqueue(enc.encode(p)); await new Promise(r => setTimeout(r, 30)); }
				c.close();
			} });
			return Promise.resolve(new Response(body, { headers: { "Content-Type": "text/event-stream" } }));
		};`)
	b.typeInto("#input", "Where is the Louvre?\ue007")
	waitDone(t, b, 10*time.Second)
	var view struct {
		Hidden, Open           bool
		Reasoning, HTML, Stats string
		Pwned                  bool
	}
	b.eval(&view, `
		const last = document.querySelector(".msg.assistant:last-of-type"), d = last.querySelector("details.reasoning");
		return { Hidden: d.hidden, Open: d.open, Reasoning: d.querySelector("div").textContent,
			HTML: last.querySelector(".answer").innerHTML, Stats: last.querySelector(".stats").textContent, Pwned: !!window.__pwned };`)
	if view.Hidden || view.Open || view.Reasoning != "Let me think about it." {
		t.Errorf("reasoning: hidden %v, open %v, %q", view.Hidden, view.Open, view.Reasoning)
	}
	for _, want := range []string{"<strong>Paris</strong>", "<em>the</em>", "2 * 3 * 4 = 24",
		`<pre><code class="language-go">x := 1 &lt; 2</code></pre>`, "<ul><li>one</li><li>two</li></ul>",
		"<blockquote>quoted &lt;script&gt;", `<a href="https://example.org" target="_blank" rel="noopener noreferrer">a link</a>`} {
		if !strings.Contains(view.HTML, want) {
			t.Errorf("the rendered answer lacks %s:\n%s", want, view.HTML)
		}
	}
	if view.Pwned || strings.Contains(view.HTML, "<script") {
		t.Errorf("markup in the answer was not escaped:\n%s", view.HTML)
	}
	if !strings.HasPrefix(view.Stats, "stop · ") || !strings.Contains(view.Stats, "9 tokens") {
		t.Errorf("stats %q", view.Stats)
	}
	shot = filepath.Join(shots, "chatpage-rendering.png")
	b.screenshot(shot)
	t.Logf("screenshot: %s", shot)

	// New chat: the conversation is gone.
	b.click("#clear")
	var left int
	if b.eval(&left, `return document.querySelectorAll("#log .msg").length + history.length`); left != 0 {
		t.Errorf("%d messages left after New chat", left)
	}
	srv.stop(t)
}

// waitDone waits for the last reply to end (its data-done attribute).
func waitDone(t *testing.T, b *browser, timeout time.Duration) {
	t.Helper()
	b.waitFor("the reply to end", timeout,
		`const last = document.querySelector(".msg.assistant:last-of-type"); return !!last && last.dataset.done === "true"`)
}

// waitIdle waits for the server's running and waiting gauges to read 0.
func waitIdle(t *testing.T, base string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^vllm:num_requests_(running|waiting)\{[^}]*\} ([0-9.e+]+)$`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		busy := false
		for _, m := range re.FindAllStringSubmatch(string(body), -1) {
			busy = busy || m[2] != "0"
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still runs a request 10s after Stop:\n%s", re.FindAllString(string(body), -1))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// artifactDir is where a test keeps files for people to look at: the
// test's artifact directory under go test's -artifacts flag, else
// $TMPDIR/pagoda-e2e-artifacts (kept after the test).
func artifactDir(t *testing.T) string {
	t.Helper()
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir := filepath.Join(os.TempDir(), "pagoda-e2e-artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
