package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"

	"pagoda/engine"
)

// Embeddings: POST /v1/embeddings (OpenAI's, with vLLM's fields) and
// Ollama's /api/embed and /api/embeddings (ollama.go) pool the loaded
// model's final-norm hidden states (engine.Request.Pooling: the server's
// --pooling, last by default, as vLLM pools decoder models) and normalise
// them. Each input is one prefill-only engine request: batched beside
// generation, sharing the prefix cache (last pooling), never decoding.

// embeddingRequest is POST /v1/embeddings.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	// vLLM's extensions.
	AddSpecialTokens *bool `json:"add_special_tokens"`
	Normalize        *bool `json:"normalize"`
	Priority         int   `json:"priority"`
}

func (r *embeddingRequest) modelName() string { return r.Model }

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// embeddings serves POST /v1/embeddings.
func (b *backend) embeddings(w http.ResponseWriter, r *http.Request) error {
	var req embeddingRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return badRequest("encoding_format", "encoding_format must be float or base64, got %q", req.EncodingFormat)
	}
	if !present(req.Input) {
		return badRequest("input", "input is required")
	}
	inputs, aerr := parsePrompts(req.Input, b.tok, req.AddSpecialTokens == nil || *req.AddSpecialTokens, b.e.Config().MaxModelLen)
	if aerr != nil {
		aerr.Param, aerr.Message = "input", inputMessage(aerr.Message)
		return aerr
	}
	vecs, prompt, aerr := b.embed(r.Context(), "embd-"+baseID(r), inputs, req.Priority,
		req.Normalize == nil || *req.Normalize, req.Dimensions, "dimensions")
	if aerr != nil {
		return aerr
	}
	resp := embeddingResponse{Object: "list", Model: b.name, Usage: embeddingUsage{PromptTokens: prompt, TotalTokens: prompt}}
	for i, v := range vecs {
		d := embeddingData{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			d.Embedding = base64Floats(v)
		}
		resp.Data = append(resp.Data, d)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// inputMessage rewords parsePrompts' messages for an embeddings input.
func inputMessage(m string) string {
	return string(bytes.ReplaceAll([]byte(m), []byte("prompt"), []byte("input")))
}

// embed runs one embedding request per input, all at once, and returns
// their vectors (normalised when normalize; cut to *dims dimensions and
// normalised again when dims is set, as Matryoshka models are read) and
// the number of input tokens. dimsParam names the dims field in errors.
func (b *backend) embed(ctx context.Context, id string, inputs []promptInput, priority int, normalize bool, dims *int, dimsParam string) ([][]float32, int, *apiError) {
	dim := b.e.ModelConfig().Dim
	if dims != nil && (*dims < 1 || *dims > dim) {
		return nil, 0, badRequest(dimsParam, "%s must be in [1, %d] (the model's embedding size), got %d", dimsParam, dim, *dims)
	}
	ts, aerr := b.submitEmbed(id, inputs, priority)
	if aerr != nil {
		return nil, 0, aerr
	}
	defer b.abort(ts)
	vecs := make([][]float32, len(ts))
	tokens := 0
	for i, t := range ts {
		v, err := t.collectEmbedding(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, unavailable(5, "the request was aborted: the server is shutting down or the client left")
			}
			return nil, 0, engineError(err)
		}
		if len(v) == 0 {
			return nil, 0, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "input " + fmt.Sprint(i) + ": no embedding was produced"}
		}
		if normalize {
			engine.Normalize(v)
		}
		if dims != nil && *dims < len(v) {
			v = v[:*dims]
			engine.Normalize(v)
		}
		vecs[i] = v
		tokens += len(t.prompt)
	}
	return vecs, tokens, nil
}

// submitEmbed adds one embedding request per input (ids as submit names
// them), counted against --max-queue; on error it aborts those added.
func (b *backend) submitEmbed(id string, inputs []promptInput, priority int) ([]*tracker, *apiError) {
	if aerr := b.admit(len(inputs)); aerr != nil {
		return nil, aerr
	}
	ts := make([]*tracker, 0, len(inputs))
	for i, in := range inputs {
		rid := id
		if len(inputs) > 1 {
			rid = fmt.Sprintf("%s-%d", id, i)
		}
		rid = b.claimID(rid)
		s, err := b.e.AddRequest(engine.Request{ID: rid, PromptTokens: in.ids, Priority: priority, Pooling: b.pooling})
		if err != nil {
			b.releaseID(rid)
			b.abort(ts)
			ae := engineError(err)
			ae.Param = "input"
			if len(inputs) > 1 {
				ae.Message = fmt.Sprintf("input %d: %s", i, ae.Message)
			}
			return nil, ae
		}
		ts = append(ts, &tracker{id: rid, stream: s, prompt: in.ids, m: b.m, n: 1})
	}
	return ts, nil
}

// collectEmbedding reads an embedding request to its end and returns its
// vector.
func (t *tracker) collectEmbedding(ctx context.Context) ([]float32, error) {
	var vec []float32
	for {
		d, err := t.stream.Recv(ctx)
		if err == io.EOF {
			return vec, t.err
		}
		if err != nil {
			return nil, err
		}
		t.add(d)
		if d.Embedding != nil {
			vec = d.Embedding
		}
	}
}

// base64Floats is OpenAI's base64 encoding of an embedding: its float32s,
// little-endian.
func base64Floats(v []float32) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf)
}
