package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// faultHub serves one repo whose file handler is given; the listing names
// files.
func faultHub(t *testing.T, files []string, file http.HandlerFunc, listing http.HandlerFunc) *Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/models/org/repo", func(w http.ResponseWriter, r *http.Request) {
		if listing != nil {
			listing(w, r)
			return
		}
		var b strings.Builder
		b.WriteString(`{"siblings": [`)
		for i, f := range files {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"rfilename": "` + f + `"}`)
		}
		b.WriteString("]}")
		w.Write([]byte(b.String()))
	})
	mux.HandleFunc("/org/repo/resolve/main/", file)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &Client{Endpoint: srv.URL, Dir: t.TempDir(),
		Limits: Limits{Idle: 150 * time.Millisecond, Listing: 300 * time.Millisecond, Backoff: 10 * time.Millisecond}}
}

// TestDownloadLimits: a hub that trickles, stalls, never finishes its
// listing, streams without a length past the disk's reserve or names a
// 99,999-part split fails fast with a message saying so, and leaves no
// file in the cache.
func TestDownloadLimits(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	trickle := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		for range 100 { // a byte every 10 ms: 100 B/s
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hold:
		}
	}
	endless := func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // chunked: no Content-Length
		buf := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}
	slowListing := func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"siblings": [`))
		w.(http.Flusher).Flush()
		stall(w, r)
	}
	for _, c := range []struct {
		name    string
		files   []string
		ref     Ref
		file    http.HandlerFunc
		listing http.HandlerFunc
		reserve int64
		want    string
	}{
		{"trickle", nil, Ref{Repo: "org/repo", File: "m.gguf"}, trickle, nil, 0, "stalled or trickles"},
		{"stall", nil, Ref{Repo: "org/repo", File: "m.gguf"}, stall, nil, 0, "stalled or trickles"},
		{"listing", nil, Ref{Repo: "org/repo"}, stall, slowListing, 0, "did not finish within"},
		{"no length", nil, Ref{Repo: "org/repo", File: "m.gguf"}, endless, nil, 1 << 62, "announced no size"},
		{"parts", []string{"m-00001-of-99999.gguf"}, Ref{Repo: "org/repo"}, stall, nil, 0, "more than the 256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := faultHub(t, c.files, c.file, c.listing)
			cl.Limits.Reserve = c.reserve
			start := time.Now()
			_, err := cl.Resolve(ctx, c.ref)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
			var left []string
			filepath.WalkDir(cl.Dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".part") {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("files left in the cache: %v", left)
			}
			t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
		})
	}
}
