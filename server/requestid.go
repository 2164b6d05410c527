package server

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// RequestIDHeader is the header a client may set to name its request; the
// response always carries it back (vLLM's --enable-request-id-headers,
// always on here).
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's X-Request-Id (400 beyond).
const maxRequestIDLen = 256

type requestIDKey struct{}

// requestIDFrom returns the request's id set by withRequestID ("" outside
// it, e.g. in tests that call handlers directly).
func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// baseID is the id a generation request builds its own from: the
// X-Request-Id, else a fresh random one.
func baseID(r *http.Request) string {
	if id := requestIDFrom(r.Context()); id != "" {
		return id
	}
	return newID("")
}

// withRequestID gives every request an id: the client's X-Request-Id when
// it sends one (vLLM names the request after it: "cmpl-" + id, "chatcmpl-"
// + id), else 24 random hex digits. The response echoes it in X-Request-Id.
// At log level debug it logs one access line per request.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if len(id) > maxRequestIDLen || !utf8.ValidString(id) {
			writeError(w, badRequest("", "%s must be valid UTF-8 of at most %d bytes", RequestIDHeader, maxRequestIDLen))
			return
		}
		if id = strings.TrimSpace(id); id == "" {
			id = newID("")
		}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		if !s.opts.LogAccess {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		s.opts.Logger.Printf("DEBUG %s \"%s %s %s\" %d %s request_id=%s", r.RemoteAddr, r.Method, r.URL.Path, r.Proto,
			rec.status, time.Since(start).Round(time.Microsecond), id)
	})
}

// statusRecorder remembers the status code written; Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// claimID returns id when no live request of this server uses it, else id
// with a random suffix: a client may reuse an X-Request-Id (a retry while
// the first attempt is still being aborted), and engine ids must be unique.
// The caller releases the id with releaseID once the request is finished.
func (b *backend) claimID(id string) string {
	cand := id
	for {
		if _, dup := b.live.LoadOrStore(cand, struct{}{}); !dup {
			return cand
		}
		cand = id + "-" + newID("")[:8]
	}
}

func (b *backend) releaseID(id string) { b.live.Delete(id) }
