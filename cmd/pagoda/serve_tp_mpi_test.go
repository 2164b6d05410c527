//go:build mpi

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"pagoda/internal/mpitest"
	"pagoda/internal/testmodel"
)

// TestServeTensorParallel runs `pagoda serve --tensor-parallel-size 2` as
// two ranks under mpirun (this test binary, TestServeTPHelperProcess),
// checks that greedy completions equal `pagoda generate` at TP=1, then
// sends SIGTERM to rank 0: both ranks must exit cleanly (rank 0 drains,
// then ends rank 1 with the shutdown message).
func TestServeTensorParallel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	pidFile := filepath.Join(t.TempDir(), "rank0.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := mpitest.Command(ctx, t, 2, "TestServeTPHelperProcess", "PAGODA_TP_SERVE",
		strings.Join([]string{"serve", testmodel.Stories(t), "--tensor-parallel-size", "2", "--port", strconv.Itoa(port),
			"--threads", "1", "--max-model-len", "256", "--kv-cache-dtype", "f32"}, "\x1f"), "-x", "PAGODA_TP_PID")
	cmd.Env = append(cmd.Env, "PAGODA_TP_PID="+pidFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/completions", port)
	for _, prompt := range []string{"Once upon a time", "Lily and Ben", "The sun"} {
		got := completeTP(t, url, prompt, done, &out)
		code, want, stderr := runCLI("generate", "--model", testmodel.Stories(t), "--prompt", prompt, "--max-tokens", "24",
			"--kv-cache-dtype", "f32", "--threads", "1")
		if code != 0 {
			t.Fatalf("generate: %s", stderr)
		}
		if want = strings.TrimSuffix(want, "\n"); got != want {
			t.Fatalf("prompt %q: TP=2 serve %q, TP=1 generate %q", prompt, got, want)
		}
		t.Logf("prompt %q: TP=2 = TP=1: %q", prompt, got)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(string(pid))
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(out.String(), "INFO stopped") {
		t.Fatalf("after SIGTERM to rank 0: mpirun %v\n%s", err, out.String())
	}
}

// completeTP asks for 24 greedy tokens, retrying while the server starts.
func completeTP(t *testing.T, url, prompt string, done <-chan error, out *bytes.Buffer) string {
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 24, "temperature": 0})
	for range 600 {
		select {
		case err := <-done:
			t.Fatalf("mpirun ended: %v\n%s", err, out.String())
		default:
		}
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var r struct {
			Choices []struct{ Text string }
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable { // listening, the model still loading
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil || resp.StatusCode != 200 || len(r.Choices) != 1 {
			t.Fatalf("completion: status %d, %v", resp.StatusCode, err)
		}
		return r.Choices[0].Text
	}
	t.Fatalf("the server did not answer in 60 s:\n%s", out.String())
	return ""
}

// TestServeTPHelperProcess is one rank of TestServeTensorParallel (it
// returns at once otherwise).
func TestServeTPHelperProcess(t *testing.T) {
	args := os.Getenv("PAGODA_TP_SERVE")
	if args == "" {
		return
	}
	if os.Getenv("OMPI_COMM_WORLD_RANK") == "0" {
		if err := os.WriteFile(os.Getenv("PAGODA_TP_PID"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("pagoda exited %d", code)
	}
}
