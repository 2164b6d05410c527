package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// storiesPath is the tiny test model in the repository (testdata/models).
const storiesPath = "../testdata/models/stories260K/stories260K.gguf"

// soakChatTemplate joins the messages' contents: stories260K has no template.
const soakChatTemplate = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"

// TestSoakStories260K runs `pagoda bench soak` against `pagoda serve` on
// stories260K with a KV pool of 16 blocks of 16 tokens (256 tokens for up
// to 16 sequences of up to 128) and 8 blocks of swap, so that the soak's
// requests preempt each other by swapping and by recomputing. 400 requests
// at concurrency 16 with 20% client hang-ups and 5% malformed bodies must
// end with nothing lost, no 5xx, no malformed body accepted, the running,
// waiting and KV usage gauges back to 0, and the server healthy; SIGTERM
// then stops it cleanly.
func TestSoakStories260K(t *testing.T) {
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startSoakServer(t, bin, port)
	waitHealthy(t, base, srv)

	cmd := exec.Command(bin, "bench", "soak", "--base-url", base, "--num-requests", "400", "--max-concurrency", "16",
		"--hangup-rate", "0.2", "--malformed-rate", "0.05", "--max-tokens", "32", "--max-prompt-words", "32",
		"--seed", "1", "--stall-timeout", "1s", "--settle-timeout", "30s", "--request-timeout", "2m", "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("bench soak (%.1fs): %v\n%s%s", time.Since(start).Seconds(), runErr, stdout.String(), stderr.String())
	var rep struct {
		Sent, Completed, Aborted, Rejected, Lost int
		ServerErrors                             int            `json:"server_errors_5xx"`
		MalformedSent                            int            `json:"malformed_sent"`
		MalformedAccepted                        map[string]int `json:"malformed_accepted"`
		Settled                                  bool           `json:"gauges_settled"`
		ServerAlive                              bool           `json:"server_alive"`
		Preemptions                              float64        `json:"preemptions"`
		Failures                                 []string       `json:"failures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the soak printed no JSON report (%v)", err)
	}
	switch {
	case rep.Sent != 400 || rep.Completed == 0 || rep.Aborted == 0 || rep.MalformedSent == 0:
		t.Errorf("the soak did not exercise the server: %+v", rep)
	case rep.Lost != 0 || rep.ServerErrors != 0 || len(rep.MalformedAccepted) != 0:
		t.Errorf("lost %d, 5xx %d, malformed accepted %v", rep.Lost, rep.ServerErrors, rep.MalformedAccepted)
	case !rep.Settled || !rep.ServerAlive:
		t.Errorf("gauges settled %v, server alive %v", rep.Settled, rep.ServerAlive)
	case rep.Preemptions == 0:
		t.Errorf("the KV pool forced no preemption")
	case runErr != nil || len(rep.Failures) != 0:
		t.Errorf("the soak failed (%v): %v", runErr, rep.Failures)
	}
	if t.Failed() {
		return // the server's log is printed by startSoakServer's cleanup
	}
	srv.stop(t)
}

// startSoakServer starts `pagoda serve` on stories260K with the soak's
// small KV pool.
func startSoakServer(t *testing.T, bin string, port int) *server {
	t.Helper()
	cmd := exec.Command(bin, "serve", storiesPath, "--port", strconv.Itoa(port), "--chat-template", soakChatTemplate,
		"--num-gpu-blocks-override", "16", "--block-size", "16", "--swap-space", "81920", "--max-num-seqs", "16",
		"--max-model-len", "128", "--max-num-batched-tokens", "128", "--shutdown-timeout", "20s", "--disable-log-stats")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, out: out, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("pagoda serve output:\n%s", out.String())
		}
	})
	return s
}
