package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// CORS follows Starlette's CORSMiddleware as vLLM configures it: preflights
// are answered before authentication, allowed origins get the
// Access-Control-* headers, other origins none.
func TestCORS(t *testing.T) {
	explicit := &CORS{AllowedOrigins: []string{"http://app"}, AllowedMethods: []string{"GET", "POST"},
		AllowedHeaders: []string{"Authorization"}}
	creds := &CORS{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"*"}, AllowedHeaders: []string{"*"},
		AllowCredentials: true}
	preflight := func(origin, method, headers string) map[string]string {
		h := map[string]string{"Origin": origin, "Access-Control-Request-Method": method}
		if headers != "" {
			h["Access-Control-Request-Headers"] = headers
		}
		return h
	}
	for _, tc := range []struct {
		name         string
		cors         *CORS
		method, path string
		header       map[string]string
		status       int
		want         map[string]string // "" means absent
	}{
		{"default preflight", nil, "OPTIONS", "/v1/chat/completions",
			preflight("http://x", "POST", "authorization, content-type"), 200,
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT",
				"Access-Control-Allow-Headers": "authorization, content-type", "Access-Control-Max-Age": "600",
				"Access-Control-Allow-Credentials": ""}},
		{"default simple request", nil, "GET", "/version", map[string]string{"Origin": "http://x"}, 200,
			map[string]string{"Access-Control-Allow-Origin": "*", "Vary": ""}},
		{"no origin, no headers", nil, "GET", "/version", nil, 200,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"OPTIONS without preflight headers is routed", nil, "OPTIONS", "/v1/models", nil, 405,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"explicit origin preflight", explicit, "OPTIONS", "/v1/models", preflight("http://app", "GET", "Authorization"), 200,
			map[string]string{"Access-Control-Allow-Origin": "http://app", "Vary": "Origin", "Access-Control-Allow-Methods": "GET, POST",
				"Access-Control-Allow-Headers": "Accept, Accept-Language, Authorization, Content-Language, Content-Type"}},
		{"explicit origin, other origin", explicit, "OPTIONS", "/v1/models", preflight("http://evil", "GET", ""), 400,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"explicit origin, method refused", explicit, "OPTIONS", "/v1/models", preflight("http://app", "DELETE", ""), 400, nil},
		{"explicit origin, header refused", explicit, "OPTIONS", "/v1/models", preflight("http://app", "GET", "X-Secret"), 400, nil},
		{"explicit origin simple request", explicit, "GET", "/version", map[string]string{"Origin": "http://app"}, 200,
			map[string]string{"Access-Control-Allow-Origin": "http://app", "Vary": "Origin"}},
		{"other origin simple request", explicit, "GET", "/version", map[string]string{"Origin": "http://evil"}, 200,
			map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": ""}},
		{"credentials name the origin", creds, "GET", "/version", map[string]string{"Origin": "http://x"}, 200,
			map[string]string{"Access-Control-Allow-Origin": "http://x", "Access-Control-Allow-Credentials": "true", "Vary": "Origin"}},
		{"credentials preflight", creds, "OPTIONS", "/v1/completions", preflight("http://x", "POST", ""), 200,
			map[string]string{"Access-Control-Allow-Origin": "http://x", "Access-Control-Allow-Credentials": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{CORS: tc.cors, APIKey: "secret", Version: "v"})
			req := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			for k, v := range tc.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// A preflight needs no API key, the request it announces does.
func TestCORSPreflightBeforeAuth(t *testing.T) {
	s := New(Options{APIKey: "secret"})
	req := httptest.NewRequest("OPTIONS", "/v1/models", nil)
	req.Header.Set("Origin", "http://x")
	req.Header.Set("Access-Control-Request-Method", "GET")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("preflight: %d", rec.Code)
	}
	req = httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set("Origin", "http://x")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET without key: %d, Allow-Origin %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
	}
}
