package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"pagoda/internal/testmodel"
)

// soakChatTemplate joins the messages' contents: stories260K has no template.
const soakChatTemplate = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"

// TestSoakStories260K runs `pagoda bench soak` against `pagoda serve` on
// stories260K with a KV pool of 16 blocks of 16 tokens (256 tokens for up
// to 16 sequences of up to 128) and 8 blocks of swap, so that the soak's
// requests preempt each other by swapping and by recomputing. 1000
// requests at concurrency 16 with 30% client hang-ups and 20% malformed
// bodies (about 7 of each kind) must end with nothing lost, no 5xx, no
// malformed body accepted, the running, waiting and KV usage gauges back
// to 0, and the server healthy; SIGTERM then stops it cleanly.
func TestSoakStories260K(t *testing.T) {
	bin, base, srv := startSoakServer(t, "20s")

	cmd := exec.Command(bin, "bench", "soak", "--base-url", base, "--num-requests", "1000", "--max-concurrency", "16",
		"--hangup-rate", "0.3", "--malformed-rate", "0.2", "--max-tokens", "32", "--max-prompt-words", "32",
		"--seed", "1", "--stall-timeout", "1s", "--settle-timeout", "30s", "--request-timeout", "2m", "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("bench soak (%.1fs): %v\n%s%s", time.Since(start).Seconds(), runErr, stdout.String(), stderr.String())
	rep := parseSoakReport(t, stdout.Bytes())
	switch {
	case rep.Sent != 1000 || rep.Completed == 0 || rep.Aborted == 0 || rep.MalformedSent == 0:
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

// startSoakServer builds pagoda, starts `pagoda serve` on stories260K with
// the soak's small KV pool on a free port and waits until it is healthy;
// it returns the binary, the server's base URL and the server.
func startSoakServer(t *testing.T, shutdownTimeout string) (bin, base string, srv *server) {
	t.Helper()
	bin = buildPagoda(t)
	port := freePort(t)
	base = "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "serve", testmodel.Stories(t), "--port", strconv.Itoa(port), "--chat-template", soakChatTemplate,
		"--num-gpu-blocks-override", "16", "--block-size", "16", "--swap-space", "81920", "--max-num-seqs", "16",
		"--max-model-len", "128", "--max-num-batched-tokens", "128", "--shutdown-timeout", shutdownTimeout,
		"--disable-log-stats")
	srv = startProcess(t, "pagoda serve", cmd)
	waitHealthy(t, base, srv)
	return bin, base, srv
}

// soakReport is the part of `pagoda bench soak --json` the tests check.
type soakReport struct {
	Sent, Completed, Aborted, Rejected, Lost int
	ServerErrors                             int            `json:"server_errors_5xx"`
	MalformedSent                            int            `json:"malformed_sent"`
	MalformedAccepted                        map[string]int `json:"malformed_accepted"`
	LostReasons                              map[string]int `json:"lost_reasons"`
	Settled                                  bool           `json:"gauges_settled"`
	ServerAlive                              bool           `json:"server_alive"`
	Preemptions                              float64        `json:"preemptions"`
	Failures                                 []string       `json:"failures"`
}

func parseSoakReport(t *testing.T, out []byte) soakReport {
	t.Helper()
	var rep soakReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the soak printed no JSON report (%v)", err)
	}
	return rep
}

// TestSoakShutdown stops `pagoda serve` with SIGTERM in the middle of a
// soak, with a grace period too short for the requests in flight. Those
// must end with an answer or, for streams, an error event and [DONE]: no
// stream may be cut short, no request may get a 5xx; requests sent after
// the server stopped listening fail to connect (or find their idle
// connection closed), which is expected. The server must exit 0.
func TestSoakShutdown(t *testing.T) {
	bin, base, srv := startSoakServer(t, "300ms")

	cmd := exec.Command(bin, "bench", "soak", "--base-url", base, "--num-requests", "3000", "--max-concurrency", "16",
		"--hangup-rate", "0", "--malformed-rate", "0", "--max-tokens", "96", "--seed", "9", "--settle-timeout", "1s",
		"--request-timeout", "2m", "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	soakDone := make(chan struct{}) // closed when the soak has exited
	go func() {
		runErr = cmd.Wait()
		close(soakDone)
	}()
	t.Cleanup(func() {
		select {
		case <-soakDone:
		default:
			cmd.Process.Kill()
			<-soakDone
		}
	})
	waitGenerated(t, base, 300)
	if err := srv.terminate(t); err != nil {
		t.Errorf("pagoda serve exited with %v after SIGTERM", err)
	}
	<-soakDone
	t.Logf("bench soak: %v\n%s%s", runErr, stdout.String(), stderr.String())
	rep := parseSoakReport(t, stdout.Bytes())
	if rep.Completed == 0 || rep.ServerErrors != 0 {
		t.Errorf("completed %d, 5xx %d", rep.Completed, rep.ServerErrors)
	}
	for reason, n := range rep.LostReasons {
		if !connectionGone(reason) {
			t.Errorf("%d requests lost at shutdown: %s", n, reason)
		}
	}
}

// connectionGone reports whether a lost request's reason is a connection
// the stopped server refused or closed before answering: the request was
// sent after the server stopped listening, or on an idle connection it
// closed.
func connectionGone(reason string) bool {
	for _, s := range []string{"connection refused", "connection reset by peer", "server closed idle connection"} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return strings.HasSuffix(reason, ": EOF")
}

// waitGenerated waits until the server has generated n tokens
// (vllm:generation_tokens_total), so that requests are in flight.
func waitGenerated(t *testing.T, base string, n float64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if v := scrapeSum(base, "vllm:generation_tokens_total"); v >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server generated fewer than %v tokens in a minute", n)
}

// scrapeSum sums the samples of a metric on /metrics (0 when unreadable).
func scrapeSum(base, name string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}
