package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A handler serves one route of a ready server.
type handlerFunc func(b *backend, w http.ResponseWriter, r *http.Request) error

// routes builds the mux. Paths get a JSON 405 for other methods and the
// root a JSON 404.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	routeAs := func(method, path string, h handlerFunc, open bool, werr errorWriter) {
		mux.Handle(method+" "+path, s.wrapAs(h, open, werr))
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			werr(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
				Message: r.Method + " is not allowed on " + path + " (use " + method + ")"})
		})
	}
	route := func(method, path string, h handlerFunc, open bool) { routeAs(method, path, h, open, writeError) }
	route("POST", "/v1/completions", (*backend).completions, false)
	route("POST", "/v1/chat/completions", (*backend).chat, false)
	route("GET", "/v1/models", (*backend).models, false)
	route("GET", "/v1/models/{id...}", (*backend).model, false)
	route("POST", "/tokenize", (*backend).tokenize, false)
	route("POST", "/detokenize", (*backend).detokenize, false)
	route("POST", "/v1/responses", (*backend).responses, false)
	route("GET", "/v1/responses/{id}", (*backend).getResponse, false)
	mux.Handle("DELETE /v1/responses/{id}", s.wrap((*backend).deleteResponse, false))
	routeAs("POST", "/v1/messages", (*backend).messages, false, writeAnthropicError)
	routeAs("POST", "/v1/messages/count_tokens", (*backend).countTokens, false, writeAnthropicError)
	route("POST", "/v1/embeddings", (*backend).embeddings, false)
	ollama := func(method, path string, h handlerFunc, open bool) { routeAs(method, path, h, open, writeOllamaError) }
	ollama("GET", "/api/version", (*backend).ollamaVersion, true)
	ollama("GET", "/api/tags", (*backend).ollamaTags, false)
	ollama("GET", "/api/ps", (*backend).ollamaPS, false)
	ollama("POST", "/api/show", (*backend).ollamaShow, false)
	ollama("POST", "/api/chat", (*backend).ollamaChat, false)
	ollama("POST", "/api/generate", (*backend).ollamaGenerate, false)
	ollama("POST", "/api/embed", (*backend).ollamaEmbed, false)
	ollama("POST", "/api/embeddings", (*backend).ollamaEmbeddings, false)
	ollama("POST", "/api/pull", (*backend).ollamaPull, false)
	mux.HandleFunc("GET /{$}", serveChatPage)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /ready", s.health)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": s.opts.Version})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: "no route " + r.Method + " " + r.URL.Path})
	})
	return s.middleware(instrumentHTTP(s.reg, mux))
}

// health (/health and /ready) answers 200 when ready, 503 while loading,
// shutting down or after the engine failed (with the failure as the reason).
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	switch b := s.backend.Load(); {
	case b != nil && b.e.Failed() != nil:
		writeError(w, engineError(b.e.Failed()))
	case s.draining.Load():
		writeError(w, unavailable(5, "the server is shutting down"))
	case s.backend.Load() == nil:
		writeError(w, unavailable(5, "the model is loading"))
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// errorWriter writes an error response in a protocol's shape: OpenAI's
// (writeError), Anthropic's (writeAnthropicError).
type errorWriter func(w http.ResponseWriter, err error)

// wrap checks the API key (unless open), readiness and draining, counts the
// handler as active, and cancels its context when Shutdown's grace period
// ends, so that it aborts its engine requests.
func (s *Server) wrap(h handlerFunc, open bool) http.Handler { return s.wrapAs(h, open, writeError) }

// wrapAs is wrap writing its errors, and the handler's, with writeError.
func (s *Server) wrapAs(h handlerFunc, open bool, writeError errorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.active.Add(1)
		defer s.active.Add(-1)
		if !open && !s.authorized(r) {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
				Code: "invalid_api_key", Message: "missing or incorrect API key: send Authorization: Bearer <key> (or x-api-key: <key>)"})
			return
		}
		b := s.backend.Load()
		switch {
		case b != nil && b.e.Failed() != nil:
			writeError(w, engineError(b.e.Failed()))
			return
		case s.draining.Load():
			writeError(w, unavailable(5, "the server is shutting down"))
			return
		case b == nil:
			writeError(w, unavailable(5, "the model is loading"))
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.hardStop, cancel)
		defer stop()
		if err := h(b, w, r.WithContext(ctx)); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status == http.StatusInternalServerError {
				s.opts.Logger.Printf("ERROR %s %s request_id=%s: %v", r.Method, r.URL.Path, requestIDFrom(r.Context()), err)
			}
			writeError(w, err)
		}
	})
}

// authorized checks the bearer key (or Anthropic's x-api-key header) in
// constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got, ok = r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Key") != ""
	}
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.opts.APIKey)) == 1
}

// decodeRequest decodes the body into req (as decodeJSON) and checks the
// model it names.
func (b *backend) decodeRequest(w http.ResponseWriter, r *http.Request, req modelRequest) error {
	if err := b.decodeJSON(w, r, req); err != nil {
		return err
	}
	if aerr := b.checkModel(req.modelName()); aerr != nil {
		return aerr
	}
	return nil
}

// modelRequest is a request body with a model field.
type modelRequest interface{ modelName() string }

func (f *samplingFields) modelName() string  { return f.Model }
func (r *tokenizeRequest) modelName() string { return r.Model }

// decodeJSON reads the body (at most the server's limit, within its body
// timeout) into v.
//
// The read deadline is cleared only after the whole body arrived: a body
// that fails (too slow, too large, cut) leaves a deadline in the past and
// the connection marked to close, so that net/http, which discards the
// unread rest of a body after the handler, never waits on that client.
func (b *backend) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	limit := b.maxBody
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return tooLarge(limit)
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(b.bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		w.Header().Set("Connection", "close")
		rc.SetReadDeadline(time.Now())
	} else {
		rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return tooLarge(limit)
	case errors.As(err, &ne) && ne.Timeout():
		return badRequest("", "reading the request body: it did not arrive within %v", b.bodyTimeout)
	case err != nil:
		return badRequest("", "reading the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("", "invalid JSON body: %v", err)
	}
	if k, dup := duplicateKey(body); dup {
		return badRequest(k, "duplicate key %q in the JSON body: each field may appear once", k)
	}
	ignored, aerr := checkFields(body, v)
	if aerr != nil {
		return aerr
	}
	if len(ignored) > 0 {
		b.log.Printf("DEBUG %s request_id=%s: ignored fields that cannot change the output: %s",
			r.URL.Path, requestIDFrom(r.Context()), strings.Join(ignored, ", "))
	}
	return nil
}

func tooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
		Message: "request body exceeds " + formatBytes(limit)}
}

// checkModel accepts any served name; "" is allowed, as vLLM does.
func (b *backend) checkModel(name string) *apiError {
	if name == "" || slices.Contains(b.names, name) {
		return nil
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model",
		Code: "model_not_found", Message: "the model `" + name + "` does not exist; this server serves `" +
			strings.Join(b.names, "`, `") + "`"}
}
