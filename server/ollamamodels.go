package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"pagoda/engine"
)

// OllamaVersion is the version of Ollama's API that /api/version reports:
// the Ollama release whose /api routes and fields pagoda's follow.
const OllamaVersion = "0.12.0"

// ollamaDetails is Ollama's model details.
type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

type ollamaModel struct {
	Name          string        `json:"name"`
	Model         string        `json:"model"`
	ModifiedAt    string        `json:"modified_at,omitempty"`
	Size          int64         `json:"size"`
	Digest        string        `json:"digest"`
	Details       ollamaDetails `json:"details"`
	ExpiresAt     string        `json:"expires_at,omitempty"`
	SizeVRAM      *int64        `json:"size_vram,omitempty"`
	ContextLength int           `json:"context_length,omitempty"`
}

// ollamaFile is what /api/tags, /api/show and /api/ps say of the served
// GGUF file, read once.
type ollamaFile struct {
	once     sync.Once
	size     int64
	modified time.Time
	digest   string
}

var ollamaFiles sync.Map // path → *ollamaFile

// file describes the served GGUF file. The digest identifies it by path,
// size and modification time (not a hash of its contents, which would read
// gigabytes).
func (b *backend) file() *ollamaFile {
	path := b.e.Config().Model
	v, _ := ollamaFiles.LoadOrStore(path, &ollamaFile{})
	f := v.(*ollamaFile)
	f.once.Do(func() {
		if st, err := os.Stat(path); err == nil {
			f.size, f.modified = st.Size(), st.ModTime()
		}
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", path, f.size, f.modified.UnixNano()))
		f.digest = hex.EncodeToString(h[:])
	})
	return f
}

var quantName = regexp.MustCompile(`(?i)(?:^|[._-])((?:I?Q\d_K_[SMLX]{1,2})|(?:I?Q\d_K)|(?:IQ\d_[A-Z]+)|(?:Q\d_\d)|BF16|F16|F32)(?:[._-]|$)`)

// details are the model's details: its architecture, its parameters
// counted from its shape, its quantization read from the file name.
func (b *backend) details() ollamaDetails {
	c := b.e.ModelConfig()
	q := "unknown"
	if m := quantName.FindStringSubmatch(ModelName(b.e.Config().Model)); m != nil {
		q = strings.ToUpper(m[1])
	}
	return ollamaDetails{Format: "gguf", Family: c.Arch, Families: []string{c.Arch},
		ParameterSize: paramSize(paramCount(b.e)), QuantizationLevel: q}
}

// paramCount estimates the parameters from the shape: embeddings, and per
// layer the attention and feed-forward matrices (norms and biases aside).
func paramCount(e *engine.Engine) int64 {
	c := e.ModelConfig()
	d, q, kv := int64(c.Dim), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	return int64(c.VocabSize)*d + int64(c.Layers)*(2*d*q+2*d*kv+3*d*int64(c.HiddenDim))
}

func paramSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%d", n)
}

// ollamaVersion serves GET /api/version.
func (b *backend) ollamaVersion(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
	return nil
}

// ollamaModels lists the served names, as /api/tags (ps false) or /api/ps.
func (b *backend) ollamaModels(ps bool) []ollamaModel {
	f, det := b.file(), b.details()
	var out []ollamaModel
	for _, name := range b.names {
		m := ollamaModel{Name: name, Model: name, Size: f.size, Digest: f.digest, Details: det}
		if ps {
			var zero int64
			m.ExpiresAt = ollamaTime(time.Now().AddDate(100, 0, 0)) // never unloaded
			m.SizeVRAM, m.ContextLength = &zero, b.e.Config().MaxModelLen
		} else {
			m.ModifiedAt = ollamaTime(f.modified)
		}
		out = append(out, m)
	}
	return out
}

// ollamaTags serves GET /api/tags: the served model, once per name.
func (b *backend) ollamaTags(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"models": b.ollamaModels(false)})
	return nil
}

// ollamaPS serves GET /api/ps: the served model, loaded for good.
func (b *backend) ollamaPS(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"models": b.ollamaModels(true)})
	return nil
}

// ollamaShow serves POST /api/show.
func (b *backend) ollamaShow(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model   string `json:"model"`
		Name    string `json:"name"` // older clients
		Verbose bool   `json:"verbose"`
	}
	if err := b.decodeJSON(w, r, &req); err != nil {
		return err
	}
	name := ollamaName(cmpOr(req.Model, req.Name))
	if name == "" {
		return badRequest("model", "model is required")
	}
	if !slices.Contains(b.names, name) {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model '%s' not found", name)}
	}
	c := b.e.ModelConfig()
	arch := c.Arch
	info := map[string]any{"general.architecture": arch, "general.name": c.Name, "general.parameter_count": paramCount(b.e),
		arch + ".context_length": c.ContextLen, arch + ".embedding_length": c.Dim, arch + ".block_count": c.Layers,
		arch + ".feed_forward_length": c.HiddenDim, arch + ".attention.head_count": c.Heads,
		arch + ".attention.head_count_kv": c.KVHeads, arch + ".vocab_size": c.VocabSize}
	caps := []string{"completion", "tools", "embedding"}
	if b.reasoning != nil || b.harmony != nil {
		caps = append(caps, "thinking")
	}
	var params strings.Builder
	for _, kv := range strings.Fields(b.gen.String()) {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&params, "%-30s %s\n", k, v)
	}
	f := b.file()
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    "# served by pagoda from " + b.e.Config().Model + "\nFROM " + b.e.Config().Model + "\n",
		"parameters":   params.String(),
		"template":     b.tok.ChatTemplate(),
		"details":      b.details(),
		"model_info":   info,
		"capabilities": caps,
		"modified_at":  ollamaTime(f.modified),
	})
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ollamaPull serves POST /api/pull: a served name is there already; any
// other reference (what `pagoda pull` takes) is downloaded into the model
// cache with its progress as status lines ({"status": …}), ending with
// {"status": "success"}. The served model stays the one loaded: serve the
// pulled one with `pagoda serve REF`.
func (b *backend) ollamaPull(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model    string `json:"model"`
		Name     string `json:"name"`
		Insecure bool   `json:"insecure"`
		Stream   *bool  `json:"stream"`
	}
	if err := b.decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref := cmpOr(req.Model, req.Name)
	if ref == "" {
		return badRequest("model", "model is required")
	}
	stream := req.Stream == nil || *req.Stream
	served := slices.Contains(b.names, ollamaName(ref))
	if !served && b.pull == nil {
		return &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Param: "model",
			Message: "this server cannot pull models; use `pagoda pull " + ref + "`"}
	}
	out := &pullLines{w: w, rc: http.NewResponseController(w), stream: stream}
	out.status("pulling manifest")
	var err error
	if !served {
		err = b.pull(r.Context(), ref, out)
	}
	out.flushLine()
	if err != nil {
		if !stream {
			return badRequest("model", "pulling %s: %v", ref, err)
		}
		out.write(map[string]string{"error": fmt.Sprintf("pulling %s: %v", ref, err)})
		return nil
	}
	out.status("success")
	if !stream {
		writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
	}
	return nil
}

// pullLines turns the lines a pull writes into Ollama's status lines (with
// stream; without, they are dropped and one status answers at the end).
type pullLines struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	stream bool
	began  bool
	buf    bytes.Buffer
	err    error
}

func (p *pullLines) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		i := bytes.IndexAny(p.buf.Bytes(), "\r\n")
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(p.buf.Next(i + 1)))
		if line != "" {
			p.status(line)
		}
	}
	return len(b), nil
}

func (p *pullLines) flushLine() {
	if line := strings.TrimSpace(p.buf.String()); line != "" {
		p.status(line)
	}
	p.buf.Reset()
}

func (p *pullLines) status(s string) { p.write(map[string]string{"status": s}) }

func (p *pullLines) write(v any) {
	if !p.stream || p.err != nil {
		return
	}
	if !p.began {
		p.began = true
		p.w.Header().Set("Content-Type", "application/x-ndjson")
		p.w.WriteHeader(http.StatusOK)
	}
	b, _ := json.Marshal(v)
	if _, p.err = p.w.Write(append(b, '\n')); p.err == nil {
		p.err = p.rc.Flush()
	}
}

// ollamaEmbedRequest is POST /api/embed.
type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"` // absent: true, as Ollama
	Options    *ollamaOptions  `json:"options"`  // nothing in them changes an embedding
	KeepAlive  json.RawMessage `json:"keep_alive"`
	Dimensions *int            `json:"dimensions"`
}

// ollamaEmbed serves POST /api/embed: normalised embeddings of a string or
// a list of strings; inputs longer than the model length are cut to it
// unless truncate is false (then a 400).
func (b *backend) ollamaEmbed(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	var req ollamaEmbedRequest
	if err := b.decodeOllama(w, r, &req, &req.Model); err != nil {
		return err
	}
	var texts []string
	var one string
	switch {
	case !present(req.Input):
		return badRequest("input", "input is required")
	case json.Unmarshal(req.Input, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(req.Input, &texts) == nil:
	default:
		return badRequest("input", "input must be a string or a list of strings")
	}
	if len(texts) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"model": b.name, "embeddings": [][]float32{}})
		return nil
	}
	if aerr := checkPromptCount(len(texts)); aerr != nil {
		aerr.Param = "input"
		return aerr
	}
	limit := b.e.Config().MaxModelLen
	truncate := req.Truncate == nil || *req.Truncate
	inputs := make([]promptInput, len(texts))
	for i, t := range texts {
		if t == "" {
			return badRequest("input", "input[%d] must not be empty", i)
		}
		cut := limit
		if truncate {
			cut = len(t) + 2 // never more tokens than bytes, plus the special ones
		}
		ids, ok := b.tok.EncodeLimit(t, true, true, cut)
		if !ok {
			return badRequest("input", "input %d: %s: it has more than %d tokens, the model's maximum length (send truncate: true to cut it)",
				i, engine.ErrPromptTooLong, limit)
		}
		inputs[i] = promptInput{ids: ids[:min(len(ids), limit)], text: t}
	}
	vecs, tokens, aerr := b.embed(r.Context(), "embd-"+baseID(r), inputs, 0, true, req.Dimensions, "dimensions")
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": b.name, "embeddings": vecs,
		"total_duration": time.Since(start).Nanoseconds(), "load_duration": 0, "prompt_eval_count": tokens})
	return nil
}

// ollamaEmbeddings serves POST /api/embeddings, Ollama's older endpoint:
// one prompt, its embedding not normalised (as Ollama's).
func (b *backend) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model     string          `json:"model"`
		Prompt    string          `json:"prompt"`
		Options   *ollamaOptions  `json:"options"`
		KeepAlive json.RawMessage `json:"keep_alive"`
	}
	if err := b.decodeOllama(w, r, &req, &req.Model); err != nil {
		return err
	}
	if req.Prompt == "" {
		writeJSON(w, http.StatusOK, map[string]any{"embedding": []float32{}})
		return nil
	}
	in, aerr := textPrompt(b.tok, req.Prompt, true, b.e.Config().MaxModelLen)
	if aerr != nil {
		return aerr
	}
	vecs, _, aerr := b.embed(r.Context(), "embd-"+baseID(r), []promptInput{in}, 0, false, nil, "")
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": vecs[0]})
	return nil
}
