// Package hub fetches GGUF models from the Hugging Face hub into the model
// cache: references (org/repo[:QUANT], org/repo/file.gguf, and the hub
// addresses and Ollama's and llama.cpp's forms of them), the repo's file
// listing, the choice of a file by quantization as llama.cpp's -hf does,
// and resumable, sha256-verified downloads.
//
// Cache layout: the file path/in/repo.gguf of org/repo is kept at
// Dir/org/repo/path/in/repo.gguf (Dir is $PAGODA_MODELS/hf). A download
// is written to that name plus ".part" and renamed into place only once
// complete and verified, so a file under its final name is always whole.
package hub

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Ref is a Hugging Face model reference. Exactly one of Quant and File may
// be set: org/repo[:QUANT] picks a file by quantization (Quant empty: the
// default choice), org/repo/path/file.gguf names the file.
type Ref struct {
	Repo  string // "org/repo"
	Quant string // e.g. "Q4_K_M", matched case-insensitively
	File  string // path of the file in the repo, slash-separated
}

// ErrNotRef reports a string that does not have the form of a Hugging Face
// reference.
var ErrNotRef = errors.New("not a Hugging Face reference (want org/repo[:QUANT], org/repo/file.gguf, " +
	"hf.co/org/repo[:QUANT] or a huggingface.co URL)")

var (
	namePart  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	quantPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// hubHosts are the hosts of the hub's web addresses.
var hubHosts = []string{"huggingface.co", "hf.co", "www.huggingface.co"}

// ParseRef parses a model reference in any of the forms people paste:
//
//	org/repo, org/repo:QUANT, org/repo/path/file.gguf   pagoda's (QUANT as llama.cpp's -hf)
//	hf.co/org/repo[:QUANT], huggingface.co/org/repo[:QUANT]   Ollama's
//	hf://org/repo[:QUANT], hf://org/repo/path/file.gguf  llama.cpp's llama-run (also huggingface://)
//	https://huggingface.co/org/repo                      a repo page (also .../tree/main)
//	https://huggingface.co/org/repo/resolve/main/path/file.gguf   a file's download URL (?download=true too)
//	https://huggingface.co/org/repo/blob/main/path/file.gguf      a file's page
//
// (with http://, hf.co or www.huggingface.co as well). Anything else (a
// bare name, a path with a leading / or ., a file not ending in .gguf, ".."
// components, another site, a revision other than main) is ErrNotRef or a
// more precise error wrapping it. Errors do not repeat s: the caller names
// the reference once.
func ParseRef(s string) (Ref, error) {
	for _, scheme := range []string{"hf://", "huggingface://"} {
		if rest, ok := cutPrefixFold(s, scheme); ok {
			return parsePlain(rest)
		}
	}
	if u, ok := hubURL(s); ok {
		return parseURLPath(u)
	}
	return parsePlain(s)
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// hubURL recognizes a web address of the hub, with or without http(s)://,
// and returns it parsed; false for anything else.
func hubURL(s string) (*url.URL, bool) {
	raw := s
	if _, ok := cutPrefixFold(s, "https://"); !ok {
		if _, ok := cutPrefixFold(s, "http://"); !ok {
			raw = "https://" + s
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || !slices.Contains(hubHosts, strings.ToLower(u.Host)) {
		return nil, false
	}
	return u, true
}

// parseURLPath reads the path of a hub address: /org/repo[:QUANT] (Ollama's
// hf.co/org/repo:QUANT has no scheme but is read here too),
// /org/repo/tree/..., /org/repo/resolve/main/FILE, /org/repo/blob/main/FILE
// or /org/repo/FILE.
func parseURLPath(u *url.URL) (Ref, error) {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(segs) >= 1 && (segs[0] == "datasets" || segs[0] == "spaces"):
		return Ref{}, fmt.Errorf("a %s address is not a model repo: %w", strings.TrimSuffix(segs[0], "s"), ErrNotRef)
	case len(segs) == 2:
		return parsePlain(segs[0] + "/" + segs[1])
	case len(segs) >= 3 && segs[2] == "tree":
		return parsePlain(segs[0] + "/" + segs[1])
	case len(segs) >= 5 && (segs[2] == "resolve" || segs[2] == "blob"):
		if segs[3] != Revision {
			return Ref{}, fmt.Errorf("revision %q: pagoda downloads the %s branch only (.../%s/%s/...): %w",
				segs[3], Revision, segs[2], Revision, ErrNotRef)
		}
		return parsePlain(strings.Join(append(segs[:2:2], segs[4:]...), "/"))
	case len(segs) >= 3 && segs[2] != "resolve" && segs[2] != "blob":
		return parsePlain(strings.Join(segs, "/")) // hf.co/org/repo/file.gguf
	}
	return Ref{}, fmt.Errorf("not the address of a repo or of a file in it: %w", ErrNotRef)
}

// parsePlain parses org/repo, org/repo:QUANT or org/repo/path/file.gguf.
func parsePlain(s string) (Ref, error) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) < 2 || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") {
		return Ref{}, ErrNotRef // a bare name, or a relative path
	}
	org, repo := parts[0], parts[1]
	var r Ref
	if len(parts) == 3 {
		r.File = parts[2]
		if err := checkFile(r.File); err != nil {
			return Ref{}, err
		}
	} else if i := strings.IndexByte(repo, ':'); i >= 0 {
		repo, r.Quant = repo[:i], repo[i+1:]
		if !quantPart.MatchString(r.Quant) {
			return Ref{}, fmt.Errorf("bad quantization %q: %w", r.Quant, ErrNotRef)
		}
	}
	switch {
	case !validName(org):
		return Ref{}, fmt.Errorf("bad user or organization name %q: %w", org, ErrNotRef)
	case !validName(repo):
		return Ref{}, fmt.Errorf("bad repo name %q: %w", repo, ErrNotRef)
	}
	r.Repo = org + "/" + repo
	return r, nil
}

func validName(s string) bool {
	return len(s) <= 96 && namePart.MatchString(s) && !strings.Contains(s, "..")
}

// checkFile accepts a relative slash-separated path ending in .gguf whose
// components are neither empty, "." nor "..", so that it stays inside its
// repo's cache directory.
func checkFile(p string) error {
	if !strings.HasSuffix(strings.ToLower(p), ".gguf") {
		return fmt.Errorf("file %q does not end in .gguf: %w", p, ErrNotRef)
	}
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("file %q: bad character: %w", p, ErrNotRef)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("file %q: empty, . or .. component: %w", p, ErrNotRef)
		}
	}
	return nil
}

// String is the reference in the form ParseRef reads.
func (r Ref) String() string {
	switch {
	case r.File != "":
		return r.Repo + "/" + r.File
	case r.Quant != "":
		return r.Repo + ":" + r.Quant
	}
	return r.Repo
}
