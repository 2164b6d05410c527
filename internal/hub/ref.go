// Package hub fetches GGUF models from the Hugging Face hub into the model
// cache: references (org/repo[:QUANT], org/repo/file.gguf), the repo's file
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
	"regexp"
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
var ErrNotRef = errors.New("not a Hugging Face reference (want org/repo[:QUANT] or org/repo/file.gguf)")

var (
	namePart  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	quantPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// ParseRef parses org/repo, org/repo:QUANT or org/repo/path/file.gguf.
// Anything else (a bare name, a path with a leading / or ., a file not
// ending in .gguf, ".." components) is ErrNotRef or a more precise error
// wrapping it.
func ParseRef(s string) (Ref, error) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) < 2 {
		return Ref{}, ErrNotRef
	}
	org, repo := parts[0], parts[1]
	var r Ref
	if len(parts) == 3 {
		r.File = parts[2]
		if err := checkFile(r.File); err != nil {
			return Ref{}, fmt.Errorf("%q: %w", s, err)
		}
	} else if i := strings.IndexByte(repo, ':'); i >= 0 {
		repo, r.Quant = repo[:i], repo[i+1:]
		if !quantPart.MatchString(r.Quant) {
			return Ref{}, fmt.Errorf("%q: bad quantization %q: %w", s, r.Quant, ErrNotRef)
		}
	}
	if !validName(org) || !validName(repo) {
		return Ref{}, fmt.Errorf("%q: bad repo name: %w", s, ErrNotRef)
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
