//go:build mpi

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// TestServeTPRankFaults serves with --tensor-parallel-size 2 under mpirun
// and makes rank 1 stop answering (SIGSTOP) or die (SIGKILL) while a
// streamed and a plain request are in flight: the stream must end with an
// error event and [DONE], the plain request with a 503 error object, /health
// must answer 503 with the reason (while rank 0 still can), and mpirun must
// end with a non-zero status.
func TestServeTPRankFaults(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) { tpFault(t, sig) })
	}
}

func tpFault(t *testing.T, sig syscall.Signal) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := mpitest.Command(ctx, t, 2, "TestServeTPFaultHelperProcess", "PAGODA_TP_FAULT",
		strings.Join([]string{"serve", testmodel.Stories(t), "--tensor-parallel-size", "2", "--port", strconv.Itoa(port),
			"--threads", "1", "--max-model-len", "256", "--kv-cache-dtype", "f32", "--tp-step-timeout", "2"}, "\x1f"),
		"-x", "PAGODA_TP_PIDDIR")
	cmd.Env = append(cmd.Env, "PAGODA_TP_PIDDIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	completeTP(t, base+"/v1/completions", "Once upon a time", done, &out) // up and serving
	pid1 := readPID(t, filepath.Join(dir, "1"))
	defer syscall.Kill(pid1, syscall.SIGKILL) // a stopped rank must not outlive the test

	// The stream and the plain request start; then rank 1 stops or dies.
	type answer struct {
		status int
		body   string
	}
	plain := make(chan answer, 1)
	go func() {
		code, body := postTP(base+"/v1/completions", `{"prompt": "Lily and Ben", "max_tokens": 200, "ignore_eos": true}`)
		plain <- answer{code, body}
	}()
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "The sun", "max_tokens": 200, "ignore_eos": true, "stream": true}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v\n%s", resp, err, out.String())
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
			if len(events) == 2 {
				if err := syscall.Kill(pid1, sig); err != nil {
					t.Fatal(err)
				}
				t.Logf("sent %v to rank 1 (pid %d)", sig, pid1)
			}
		}
	}
	resp.Body.Close()
	health, _ := postTP(base+"/health", "") // answered while rank 0 lingers
	n := len(events)
	if n < 3 || events[n-1] != "[DONE]" || !strings.Contains(events[n-2], `"error"`) {
		t.Fatalf("stream after %v: %d events, last %q\n%s", sig, n, events[max(n-3, 0):], out.String())
	}
	t.Logf("stream: %d events, ending %s [DONE]", n, events[n-2])
	p := <-plain
	if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, `"error"`) {
		t.Fatalf("plain request after %v: %d %s\n%s", sig, p.status, p.body, out.String())
	}
	t.Logf("plain request: %d %s", p.status, p.body)
	t.Logf("/health right after: %d", health)
	if sig == syscall.SIGSTOP && health != http.StatusServiceUnavailable {
		t.Fatalf("/health after the step timed out: %d, want 503", health)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("mpirun exited 0 after rank 1 got %v\n%s", sig, out.String())
		}
		t.Logf("mpirun: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatalf("mpirun still running 90 s after rank 1 got %v\n%s", sig, out.String())
	}
}

func readPID(t *testing.T, path string) int {
	for range 100 {
		if b, err := os.ReadFile(path); err == nil {
			if p, err := strconv.Atoi(string(b)); err == nil {
				return p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// postTP posts body (GET when empty) and returns the status and body; a
// connection error is status 0.
func postTP(url, body string) (int, string) {
	var resp *http.Response
	var err error
	if body == "" {
		resp, err = http.Get(url)
	} else {
		resp, err = http.Post(url, "application/json", strings.NewReader(body))
	}
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	_ = json.Unmarshal(b, &v)
	return resp.StatusCode, string(b)
}

// TestServeTPFaultHelperProcess is one rank of TestServeTPRankFaults: it
// writes its pid to PAGODA_TP_PIDDIR/RANK, then serves (it returns at once
// otherwise). A non-zero exit is the expected end: it is reported, not a
// failure of this helper.
func TestServeTPFaultHelperProcess(t *testing.T) {
	args := os.Getenv("PAGODA_TP_FAULT")
	if args == "" {
		return
	}
	rank := os.Getenv("OMPI_COMM_WORLD_RANK")
	if err := os.WriteFile(filepath.Join(os.Getenv("PAGODA_TP_PIDDIR"), rank), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr)
	fmt.Printf("rank %s: pagoda exited %d\n", rank, code)
	os.Exit(code)
}
