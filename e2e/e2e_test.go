// Package e2e holds the end-to-end test of `pagoda serve`: the real binary
// on the default model, driven by the official OpenAI Python client and by
// `pagoda bench serve`.
package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pagoda/internal/testmodel"
)

const (
	servedName  = "smollm2"
	maxModelLen = 1024
)

// TestServeEndToEnd starts `pagoda serve` on the default model on a free
// loopback port, runs openai_client.py against it in a virtual environment
// with the openai package, then `pagoda bench serve` for 100 requests, and
// finally stops the server with SIGTERM, which must exit 0.
func TestServeEndToEnd(t *testing.T) {
	modelPath := testmodel.Default(t)
	python := openaiVenv(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startServer(t, bin, modelPath, port)
	waitHealthy(t, base, srv)

	runLogged(t, "openai client", exec.Command(python, "openai_client.py", "--base-url", base+"/v1",
		"--model", servedName, "--max-model-len", strconv.Itoa(maxModelLen)))

	resultDir := t.TempDir()
	runLogged(t, "bench serve", exec.Command(bin, "bench", "serve", "--base-url", base, "--num-prompts", "100",
		"--random-input-len", "16", "--random-output-len", "8", "--max-concurrency", "8", "--ignore-eos",
		"--metric-percentiles", "50,99", "--disable-tqdm", "--save-result", "--result-dir", resultDir,
		"--result-filename", "bench.json"))
	checkBenchResult(t, filepath.Join(resultDir, "bench.json"))
	checkMetrics(t, base)
	srv.stop(t)
}

// checkBenchResult: all 100 requests completed, none failed, each
// generated its 8 tokens (ignore_eos).
func checkBenchResult(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Completed         int     `json:"completed"`
		Failed            int     `json:"failed"`
		TotalOutputTokens int     `json:"total_output_tokens"`
		MeanTTFT          float64 `json:"mean_ttft_ms"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Completed != 100 || r.Failed != 0 || r.TotalOutputTokens != 800 || r.MeanTTFT <= 0 {
		t.Fatalf("bench result: %+v", r)
	}
}

// checkMetrics: the server counted the benchmark's requests.
func checkMetrics(t *testing.T, base string) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "vllm:request_success_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	if total < 101 { // the benchmark's 100, its initial test request, and the client's
		t.Fatalf("vllm:request_success_total sums to %v after the benchmark", total)
	}
}

// server is the running `pagoda serve` process.
type server struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

// startServer starts `pagoda serve` on the default model's settings with
// extra flags.
func startServer(t *testing.T, bin, modelPath string, port int, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", modelPath, "--port", strconv.Itoa(port), "--served-model-name", servedName,
		"--max-model-len", strconv.Itoa(maxModelLen), "--max-num-seqs", "8", "--shutdown-timeout", "20s"}, extra...)
	return startProcess(t, "pagoda serve", exec.Command(bin, args...))
}

// startProcess starts cmd; s.exited delivers its exit status once. At
// cleanup a process still running is killed, and its output is logged if
// the test failed.
func startProcess(t *testing.T, what string, cmd *exec.Cmd) *server {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	s := &server{cmd: cmd, out: out, exited: make(chan error, 1)}
	done := make(chan struct{}) // closed when the process has exited
	go func() {
		err := cmd.Wait()
		close(done)
		s.exited <- err
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", what, out.String())
		}
	})
	return s
}

// stop sends SIGTERM and expects a clean exit (status 0) within the grace
// period, and the log line of a clean shutdown.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.terminate(t); err != nil {
		t.Fatalf("pagoda serve exited with %v after SIGTERM", err)
	}
	if !strings.Contains(s.out.String(), "INFO stopped") {
		t.Fatalf("no clean shutdown in the log:\n%s", s.out.String())
	}
}

// terminate sends SIGTERM and returns how the process exited (nil: status
// 0); it fails the test when the process is still running a minute later.
func (s *server) terminate(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		return err
	case <-time.After(time.Minute):
		t.Fatal("pagoda serve did not exit within a minute of SIGTERM")
		return nil
	}
}

// waitHealthy polls /health until 200 (503 while loading).
func waitHealthy(t *testing.T, base string, s *server) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-s.exited:
			t.Fatalf("pagoda serve exited early (%v):\n%s", err, s.out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pagoda serve not healthy after 3 minutes:\n%s", s.out.String())
		}
	}
}

// runLogged runs cmd in this directory and fails the test with its output
// if it fails; on success its output goes to the test log.
func runLogged(t *testing.T, what string, cmd *exec.Cmd) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s (%.0fs):\n%s", what, time.Since(start).Seconds(), out.String())
	if err != nil {
		t.Fatalf("%s failed: %v", what, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for the writer process and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
