package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CORS is the cross-origin policy, as vLLM configures Starlette's
// CORSMiddleware: --allowed-origins, --allowed-methods, --allowed-headers
// (each ["*"] by default) and --allow-credentials (false).
type CORS struct {
	AllowedOrigins   []string
	AllowedMethods   []string
	AllowedHeaders   []string
	AllowCredentials bool
}

// DefaultCORS is vLLM's default: any origin, method and header, no
// credentials.
func DefaultCORS() CORS {
	return CORS{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"*"}, AllowedHeaders: []string{"*"}}
}

// corsMaxAge is Starlette's default Access-Control-Max-Age (seconds).
const corsMaxAge = 600

// corsAllMethods are the methods "*" stands for in a preflight answer
// (Starlette's ALL_METHODS).
var corsAllMethods = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}

// corsSafelisted are the request headers always allowed (Starlette's
// SAFELISTED_HEADERS).
var corsSafelisted = []string{"Accept", "Accept-Language", "Content-Language", "Content-Type"}

// cors applies a CORS policy with Starlette's semantics:
//   - a request without Origin passes through untouched;
//   - a preflight (OPTIONS with Origin and Access-Control-Request-Method)
//     is answered here, before authentication and routing: 200 "OK" when
//     the origin, method and requested headers are allowed, else 400, with
//     the Access-Control-* headers either way;
//   - any other request with an allowed Origin passes through with
//     Access-Control-Allow-Origin (the origin itself, plus Vary: Origin,
//     unless any origin is allowed without credentials: then "*") and
//     Access-Control-Allow-Credentials when credentials are allowed; a
//     request from an origin not allowed gets no CORS header.
type cors struct {
	anyOrigin, anyMethod, anyHeader bool
	origins                         []string
	methods                         []string // canonical upper case; all methods when anyMethod
	headers                         []string // lower case, safelisted included
	allowHeaders                    string   // Access-Control-Allow-Headers of a preflight ("" when anyHeader)
	credentials                     bool
}

func newCORS(c CORS) *cors {
	p := &cors{anyOrigin: slices.Contains(c.AllowedOrigins, "*"), anyMethod: slices.Contains(c.AllowedMethods, "*"),
		anyHeader: slices.Contains(c.AllowedHeaders, "*"), origins: c.AllowedOrigins, credentials: c.AllowCredentials}
	p.methods = corsAllMethods
	if !p.anyMethod {
		p.methods = nil
		for _, m := range c.AllowedMethods {
			p.methods = append(p.methods, strings.ToUpper(m))
		}
	}
	canon := slices.Clone(corsSafelisted)
	for _, h := range c.AllowedHeaders {
		if h != "*" && !slices.ContainsFunc(canon, func(s string) bool { return strings.EqualFold(s, h) }) {
			canon = append(canon, h)
		}
	}
	slices.Sort(canon)
	for _, h := range canon {
		p.headers = append(p.headers, strings.ToLower(h))
	}
	if !p.anyHeader {
		p.allowHeaders = strings.Join(canon, ", ")
	}
	return p
}

// explicitOrigin reports whether answers name the origin rather than "*".
func (p *cors) explicitOrigin() bool { return !p.anyOrigin || p.credentials }

func (p *cors) allowedOrigin(origin string) bool {
	return p.anyOrigin || slices.Contains(p.origins, origin)
}

// wrap returns next behind the policy.
func (p *cors) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			p.preflight(w, r, origin)
			return
		}
		if p.allowedOrigin(origin) {
			h := w.Header()
			if p.explicitOrigin() {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Add("Vary", "Origin")
			} else {
				h.Set("Access-Control-Allow-Origin", "*")
			}
			if p.credentials {
				h.Set("Access-Control-Allow-Credentials", "true")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers an OPTIONS preflight request.
func (p *cors) preflight(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	ok := true
	if p.explicitOrigin() {
		h.Add("Vary", "Origin")
	} else {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	if p.allowedOrigin(origin) {
		if p.explicitOrigin() {
			h.Set("Access-Control-Allow-Origin", origin)
		}
	} else {
		ok = false
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(p.methods, ", "))
	h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
	if p.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if !p.anyMethod && !slices.Contains(p.methods, r.Header.Get("Access-Control-Request-Method")) {
		ok = false
	}
	requested := r.Header.Get("Access-Control-Request-Headers")
	switch {
	case p.anyHeader && requested != "":
		h.Set("Access-Control-Allow-Headers", requested)
	case !p.anyHeader:
		h.Set("Access-Control-Allow-Headers", p.allowHeaders)
		for _, rh := range strings.Split(requested, ",") {
			if rh = strings.ToLower(strings.TrimSpace(rh)); rh != "" && !slices.Contains(p.headers, rh) {
				ok = false
			}
		}
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("Disallowed CORS origin, method or headers"))
		return
	}
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("OK"))
}
