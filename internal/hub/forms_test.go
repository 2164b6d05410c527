package hub_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"pagoda/internal/hub"
	"pagoda/internal/hub/hubtest"
)

// The forms people paste — the hub's addresses (repo page, a file's
// resolve and blob URLs), Ollama's hf.co/org/repo[:QUANT] and llama.cpp's
// hf://org/repo[...] — parse to the same references as pagoda's own.
func TestParseRefForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want hub.Ref
	}{
		{"https://huggingface.co/org/repo", hub.Ref{Repo: "org/repo"}},
		{"https://huggingface.co/org/repo/", hub.Ref{Repo: "org/repo"}},
		{"http://www.huggingface.co/org/repo/tree/main", hub.Ref{Repo: "org/repo"}},
		{"https://huggingface.co/org/repo/resolve/main/m-Q8_0.gguf?download=true", hub.Ref{Repo: "org/repo", File: "m-Q8_0.gguf"}},
		{"https://huggingface.co/org/repo/blob/main/Q4_K_M/m-00001-of-00002.gguf", hub.Ref{Repo: "org/repo", File: "Q4_K_M/m-00001-of-00002.gguf"}},
		{"https://hf.co/org/repo/resolve/main/m%20x.gguf", hub.Ref{Repo: "org/repo", File: "m x.gguf"}},
		{"HTTPS://HuggingFace.co/org/repo", hub.Ref{Repo: "org/repo"}},
		{"hf.co/bartowski/SmolLM2-GGUF:Q4_K_M", hub.Ref{Repo: "bartowski/SmolLM2-GGUF", Quant: "Q4_K_M"}},
		{"huggingface.co/org/repo", hub.Ref{Repo: "org/repo"}},
		{"hf.co/org/repo/m.gguf", hub.Ref{Repo: "org/repo", File: "m.gguf"}},
		{"hf://org/repo", hub.Ref{Repo: "org/repo"}},
		{"hf://org/repo:q8_0", hub.Ref{Repo: "org/repo", Quant: "q8_0"}},
		{"huggingface://org/repo/dir/m.gguf", hub.Ref{Repo: "org/repo", File: "dir/m.gguf"}},
	} {
		if got, err := hub.ParseRef(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"https://huggingface.co/org/repo/resolve/v1.0/m.gguf", "https://huggingface.co/datasets/org/data",
		"https://huggingface.co/org", "https://example.com/org/repo", "https://huggingface.co/org/repo/resolve/main/README.md",
		"https://huggingface.co/org/repo/blob/main", "hf://org", "hf.co/org/..", "./models/m.gguf", "~/m.gguf",
		"https://huggingface.co/org/repo/resolve/main/../../x.gguf",
	} {
		_, err := hub.ParseRef(bad)
		if !errors.Is(err, hub.ErrNotRef) {
			t.Errorf("ParseRef(%q): %v, want ErrNotRef", bad, err)
		} else if strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRef(%q): %q repeats the reference (the caller names it)", bad, err)
		}
	}
}

// Each form downloads from the fake hub; once cached, the others are
// answered without the network.
func TestResolveForms(t *testing.T) {
	data := blob(3000, 20)
	h, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{"m-Q8_0.gguf": {Data: data}}}})
	p := mustResolve(t, c, "https://huggingface.co/org/repo/resolve/main/m-Q8_0.gguf?download=true")
	checkFile(t, p, data)
	n := len(h.Log())
	for _, ref := range []string{"hf.co/org/repo:Q8_0", "hf://org/repo", "https://huggingface.co/org/repo",
		"https://huggingface.co/org/repo/blob/main/m-Q8_0.gguf"} {
		if got := mustResolve(t, c, ref); got != p {
			t.Errorf("%s resolves to %s, want %s", ref, got, p)
		}
	}
	if len(h.Log()) != n {
		t.Errorf("cached forms made %d requests", len(h.Log())-n)
	}
}

// A hub that cannot be reached is an ErrUnreachable naming the address
// and the cause, at once: neither the listing nor the download is retried.
func TestUnreachable(t *testing.T) {
	var dials atomic.Int32
	for _, tc := range []struct {
		name, cause string
		dialErr     error
	}{
		{"dns", "no such host", &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}},
		{"refused", "connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
	} {
		dials.Store(0)
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, tc.dialErr
		}}
		c := &hub.Client{Endpoint: "https://huggingface.co", Dir: t.TempDir(), HTTP: &http.Client{Transport: tr}}
		for _, ref := range []string{"org/repo:Q8_0", "org/repo/m.gguf"} {
			dials.Store(0)
			err := resolveErr(c, ref)
			var ue *hub.UnreachableError
			if !errors.Is(err, hub.ErrUnreachable) || !errors.As(err, &ue) || ue.URL != "https://huggingface.co" {
				t.Fatalf("%s %s: %v, want an UnreachableError for https://huggingface.co", tc.name, ref, err)
			}
			if ue.Cause != tc.cause {
				t.Errorf("%s: cause %q, want %q", ref, ue.Cause, tc.cause)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%s %s: %d dials, want 1 (no retry)", tc.name, ref, n)
			}
		}
	}
}
