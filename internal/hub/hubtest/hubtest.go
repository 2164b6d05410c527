// Package hubtest is an in-process fake of the Hugging Face hub's HTTP API
// for tests: GET /api/models/{org}/{repo} lists a repo's files, and GET
// /{org}/{repo}/resolve/{rev}/{file} answers as the hub does, with a 302 to
// a second server (its CDN) carrying the file's sha256 in X-Linked-Etag,
// or for Direct files a relative redirect on the hub itself, which serves
// them with the sha256 as ETag. Both honour Range requests. Gated repos
// answer 401 without the right bearer token. Files can be served
// corrupted, cut off once mid-body, or with ranges ignored.
package hubtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"time"
)

// File is a file of a fake repo and how it is served.
type File struct {
	Data          []byte
	Corrupt       bool // serve Data with its last byte flipped, announcing Data's sha256
	InterruptOnce bool // the first GET sends half the body, then drops the connection
	IgnoreRange   bool // answer 200 with the whole file to a Range request
	Direct        bool // no CDN: a relative redirect on the hub, ETag = sha256
}

// Repo is a fake repo: files by path. A gated repo wants Token.
type Repo struct {
	Files map[string]*File
	Gated bool
}

// Request is a request the fake received.
type Request struct {
	Server        string // "hub" or "cdn"
	Path          string
	Range         string
	Authorization string
}

// Hub is the fake hub. URL is its endpoint (HF_ENDPOINT).
type Hub struct {
	URL   string
	Token string // the token gated repos accept
	Repos map[string]*Repo

	hub, cdn *httptest.Server
	mu       sync.Mutex
	log      []Request
	cut      map[string]bool // files already cut off once
}

// New starts a fake hub serving repos; Close stops it.
func New(repos map[string]*Repo) *Hub {
	h := &Hub{Repos: repos, Token: "hf_test_token", cut: map[string]bool{}}
	hub := http.NewServeMux()
	hub.HandleFunc("GET /api/models/{org}/{repo}", h.listing)
	hub.HandleFunc("GET /{org}/{repo}/resolve/{rev}/{file...}", h.resolve)
	hub.HandleFunc("GET /api/resolve-cache/models/{org}/{repo}/{rev}/{file...}", h.direct)
	cdn := http.NewServeMux()
	cdn.HandleFunc("GET /blobs/{org}/{repo}/{file...}", h.blob)
	h.hub, h.cdn = httptest.NewServer(h.logged("hub", hub)), httptest.NewServer(h.logged("cdn", cdn))
	h.URL = h.hub.URL
	return h
}

// Close stops both servers.
func (h *Hub) Close() { h.hub.Close(); h.cdn.Close() }

// Log returns the requests received so far.
func (h *Hub) Log() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.log...)
}

// SHA256 is the hex sha256 of data, as the hub announces it.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func (h *Hub) logged(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.log = append(h.log, Request{name, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// repo finds the request's repo and checks access; false when it answered.
func (h *Hub) repo(w http.ResponseWriter, r *http.Request) (*Repo, string, bool) {
	name := r.PathValue("org") + "/" + r.PathValue("repo")
	repo, ok := h.Repos[name]
	if !ok {
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return nil, "", false
	}
	if repo.Gated && r.Header.Get("Authorization") != "Bearer "+h.Token {
		http.Error(w, `{"error":"Access to this repo is restricted"}`, http.StatusUnauthorized)
		return nil, "", false
	}
	return repo, name, true
}

func (h *Hub) listing(w http.ResponseWriter, r *http.Request) {
	repo, name, ok := h.repo(w, r)
	if !ok {
		return
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
	}
	out := struct {
		ID       string    `json:"id"`
		Siblings []sibling `json:"siblings"`
	}{ID: name}
	for f := range repo.Files {
		out.Siblings = append(out.Siblings, sibling{f})
	}
	sort.Slice(out.Siblings, func(i, j int) bool { return out.Siblings[i].RFilename < out.Siblings[j].RFilename })
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (h *Hub) resolve(w http.ResponseWriter, r *http.Request) {
	repo, name, ok := h.repo(w, r)
	if !ok {
		return
	}
	path := r.PathValue("file")
	f, ok := repo.Files[path]
	if !ok {
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	sum := SHA256(f.Data)
	if f.Direct {
		w.Header().Set("Location", "/api/resolve-cache/models/"+name+"/"+r.PathValue("rev")+"/"+path)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
	w.Header().Set("Location", h.cdn.URL+"/blobs/"+name+"/"+path)
	w.WriteHeader(http.StatusFound)
}

func (h *Hub) direct(w http.ResponseWriter, r *http.Request) {
	repo, name, ok := h.repo(w, r)
	if !ok {
		return
	}
	f, ok := repo.Files[r.PathValue("file")]
	if !ok {
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", `"`+SHA256(f.Data)+`"`)
	h.serve(w, r, name+"/"+r.PathValue("file"), f)
}

func (h *Hub) blob(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("org") + "/" + r.PathValue("repo")
	repo, ok := h.Repos[name]
	var f *File
	if ok {
		f = repo.Files[r.PathValue("file")]
	}
	if f == nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", `"cdn-`+SHA256(f.Data)[:32]+`"`) // not the sha256, as S3's
	h.serve(w, r, name+"/"+r.PathValue("file"), f)
}

// serve writes a file's body as its flags say.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request, key string, f *File) {
	data := f.Data
	if f.Corrupt && len(data) > 0 {
		data = append([]byte(nil), data...)
		data[len(data)-1] ^= 0xff
	}
	if f.IgnoreRange {
		r.Header.Del("Range")
	}
	h.mu.Lock()
	cut := f.InterruptOnce && !h.cut[key]
	h.cut[key] = h.cut[key] || cut
	h.mu.Unlock()
	if cut && r.Header.Get("Range") == "" {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection mid-body
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}
