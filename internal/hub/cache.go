package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Resolve returns the cache path of ref's model file, downloading what is
// missing: the file and, for a split GGUF, every part (the path returned is
// the first part's). A reference already satisfied by the cache is
// answered without the network (see Cached); otherwise an org/repo[:QUANT]
// reference lists the repo and picks its file with Select.
func (c *Client) Resolve(ctx context.Context, ref Ref) (string, error) {
	if file := c.Cached(ref); file != "" {
		return c.Path(ref.Repo, file), nil
	}
	if c.Offline {
		return "", fmt.Errorf("%s: %w (cache: %s)", ref, ErrOffline, c.Dir)
	}
	file := ref.File
	if file == "" {
		files, err := c.ListFiles(ctx, ref.Repo)
		if err != nil {
			return "", err
		}
		if file, err = Select(files, ref.Quant); err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		if err := checkFile(file); err != nil { // the listing names a path outside the repo
			return "", fmt.Errorf("%s: the hub lists %w", ref, err)
		}
		if err := c.checkParts(ref, file); err != nil {
			return "", err
		}
		if err := hasAll(files, Parts(file)); err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
	}
	if err := c.checkParts(ref, file); err != nil {
		return "", err
	}
	parts := Parts(file)
	for _, p := range parts {
		dest := c.Path(ref.Repo, p)
		if _, err := os.Stat(dest); err == nil {
			continue
		}
		if err := c.fetch(ctx, ref.Repo, p, dest); err != nil {
			return "", err
		}
	}
	return c.Path(ref.Repo, parts[0]), nil
}

// checkParts refuses a split GGUF of more parts than Limits.MaxParts
// before any part is named or fetched.
func (c *Client) checkParts(ref Ref, file string) error {
	if n := SplitOf(file).Count; n > c.Limits.maxParts() {
		return fmt.Errorf("%s: %s is one of %d parts, more than the %d a split GGUF may have here", ref, file, n, c.Limits.maxParts())
	}
	return nil
}

// hasAll checks that a listing holds every part of a split set.
func hasAll(files, parts []string) error {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	for _, p := range parts {
		if !have[p] {
			return fmt.Errorf("split GGUF part %s is missing from the repo", p)
		}
	}
	return nil
}

// Cached returns the repo file that satisfies ref from the cache alone, ""
// when there is none: org/repo/file.gguf when it (and every part of its
// split set) is cached; org/repo[:QUANT] when Select, applied to the
// repo's cached model files, picks one whose parts are all cached. So
// org/repo with no quant is whatever file of the repo was pulled, the
// default quantizations first.
func (c *Client) Cached(ref Ref) string {
	file := ref.File
	if file == "" {
		var err error
		if file, err = Select(c.cachedFiles(ref.Repo), ref.Quant); err != nil {
			return ""
		}
	}
	if SplitOf(file).Count > c.Limits.maxParts() {
		return ""
	}
	parts := Parts(file)
	for _, p := range parts {
		if st, err := os.Stat(c.Path(ref.Repo, p)); err != nil || !st.Mode().IsRegular() {
			return ""
		}
	}
	return parts[0]
}

// cachedFiles lists the complete .gguf files cached for a repo, as
// slash-separated paths in the repo, sorted.
func (c *Client) cachedFiles(repo string) []string {
	root := c.Path(repo, "")
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(strings.ToLower(p), ".gguf") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files
}

// Entry is a file of the cache: its reference (org/repo/file), path and
// size; Partial marks an interrupted download (a .part file).
type Entry struct {
	Ref     string
	Path    string
	Size    int64
	Partial bool
}

// List returns every file cached under Dir, by reference.
func (c *Client) List() ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == c.Dir {
				return fs.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(c.Dir, p)
		rel = filepath.ToSlash(rel)
		partial := strings.HasSuffix(rel, ".part")
		if strings.Count(rel, "/") < 2 || !strings.HasSuffix(strings.ToLower(strings.TrimSuffix(rel, ".part")), ".gguf") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Entry{Ref: strings.TrimSuffix(rel, ".part"), Path: p, Size: info.Size(), Partial: partial})
		return nil
	})
	return out, err
}

// Remove deletes the cached files of ref with their .part files and
// returns their paths: org/repo/file.gguf removes that file's split set,
// org/repo:QUANT the file Cached picks (or the .part of a file of the
// repo matching QUANT), and org/repo every file of the repo. Directories
// left empty are removed up to Dir.
func (c *Client) Remove(ref Ref) ([]string, error) {
	var files []string
	switch {
	case ref.File != "":
		files = Parts(ref.File)
	case ref.Quant != "":
		if f := c.Cached(ref); f != "" {
			files = Parts(f)
		} else if f, err := Select(c.partialFiles(ref.Repo), ref.Quant); err == nil {
			files = Parts(f)
		}
	default:
		files = append(c.cachedFiles(ref.Repo), c.partialFiles(ref.Repo)...)
	}
	var removed []string
	for _, f := range files {
		for _, p := range []string{c.Path(ref.Repo, f), c.Path(ref.Repo, f) + ".part"} {
			if err := os.Remove(p); err == nil {
				removed = append(removed, p)
				c.pruneDirs(filepath.Dir(p))
			} else if !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("%s is not in the cache (%s)", ref, c.Dir)
	}
	return removed, nil
}

// partialFiles lists the repo's interrupted downloads by their final names.
func (c *Client) partialFiles(repo string) []string {
	root := c.Path(repo, "")
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(strings.ToLower(p), ".gguf.part") {
			rel, _ := filepath.Rel(root, strings.TrimSuffix(p, ".part"))
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files
}

// pruneDirs removes dir and its parents while they are empty, stopping at
// Dir.
func (c *Client) pruneDirs(dir string) {
	root := filepath.Clean(c.Dir)
	for dir = filepath.Clean(dir); dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}
