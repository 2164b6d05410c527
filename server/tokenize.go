package server

import (
	"net/http"
	"slices"
)

// models serves GET /v1/models: one card per served name, as vLLM lists
// every --served-model-name.
func (b *backend) models(w http.ResponseWriter, _ *http.Request) error {
	list := modelList{Object: "list"}
	for _, name := range b.names {
		list.Data = append(list.Data, b.card(name))
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// model serves GET /v1/models/{id}: the card of a served name, else 404 in
// OpenAI's error format.
func (b *backend) model(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !slices.Contains(b.names, id) {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model",
			Code: "model_not_found", Message: "the model `" + id + "` does not exist"}
	}
	writeJSON(w, http.StatusOK, b.card(id))
	return nil
}

func (b *backend) card(name string) modelCard {
	return modelCard{ID: name, Object: "model", Created: b.created, OwnedBy: "pagoda", Root: b.e.Config().Model,
		MaxModelLen: b.e.Config().MaxModelLen}
}

// tokenizeRequest is vLLM's POST /tokenize: a prompt, or chat messages
// (and tools) rendered through the chat template as a chat request renders
// them.
type tokenizeRequest struct {
	Model               string         `json:"model"`
	Prompt              *string        `json:"prompt"`
	AddSpecialTokens    *bool          `json:"add_special_tokens"`
	ReturnTokenStrs     bool           `json:"return_token_strs"`
	Messages            []chatMessage  `json:"messages"`
	AddGenerationPrompt *bool          `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs"`
	ContinueFinalMsg    bool           `json:"continue_final_message"`
	Tools               []toolDef      `json:"tools"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// tokenize serves POST /tokenize. As in vLLM, a prompt longer than the
// model length is refused (400), here before it is tokenized to the end.
func (b *backend) tokenize(w http.ResponseWriter, r *http.Request) error {
	var req tokenizeRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	var ids []int32
	switch {
	case req.Prompt != nil:
		p, aerr := textPrompt(b.tok, *req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens, b.e.Config().MaxModelLen)
		if aerr != nil {
			return aerr
		}
		ids = p.ids
	case len(req.Messages) > 0:
		p, aerr := b.chatPrompt(&chatRequest{Messages: req.Messages, AddGenerationPrompt: req.AddGenerationPrompt,
			ContinueFinalMessage: req.ContinueFinalMsg, ChatTemplateKwargs: req.ChatTemplateKwargs,
			AddSpecialTokens: req.AddSpecialTokens != nil && *req.AddSpecialTokens, Tools: req.Tools})
		if aerr != nil {
			return aerr
		}
		ids = p.ids
	default:
		return badRequest("prompt", "give a prompt or messages")
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: b.e.Config().MaxModelLen, Tokens: ids}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i] = tokenString(b.tok, id)
		}
	}
	if resp.Tokens == nil {
		resp.Tokens = []int32{}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// detokenize serves POST /detokenize: {"tokens": [...]} → {"prompt": text}.
func (b *backend) detokenize(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model  string  `json:"model"`
		Tokens []int32 `json:"tokens"`
	}
	if err := b.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if aerr := b.checkModel(req.Model); aerr != nil {
		return aerr
	}
	vocab := b.tok.VocabSize()
	for _, id := range req.Tokens {
		if id < 0 || int(id) >= vocab {
			return badRequest("tokens", "token ids must be in [0, %d), got %d", vocab, id)
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": b.tok.Decode(req.Tokens)})
	return nil
}
