package server

import (
	"fmt"

	"pagoda/tokenizer"
)

// probeConversation is the conversation a chat template must render at start-up, within its
// limits: one user turn, which every chat template accepts.
var probeConversation = []tokenizer.Message{{Role: "user", Content: "Hello!"}}

// loadTemplate compiles the chat template src (origin says where it came from) and renders the
// probe conversation with it. A template that fails either, or exceeds its render limits
// (tokenizer.ChatLimits), is an error naming its origin, so the server refuses to start; with
// Options.ChatTemplateFallback it is replaced by tokenizer.PlainChatTemplate (ChatML) with a
// warning instead. It returns the source in use.
func (s *Server) loadTemplate(b *backend, src, origin string) (string, error) {
	t, err := tokenizer.CompileTemplate(src)
	if err == nil {
		_, err = t.Render(probeConversation, tokenizer.ChatOptions{AddGenerationPrompt: true, BOS: b.bosText, EOS: b.eosText})
	}
	if err == nil {
		b.template = t
		return src, nil
	}
	err = fmt.Errorf("the chat template from %s cannot be used: %w", origin, err)
	if !s.opts.ChatTemplateFallback {
		return "", fmt.Errorf("%w (--chat-template-fallback serves a plain ChatML template instead)", err)
	}
	s.opts.Logger.Printf("WARNING %v; --chat-template-fallback: serving the plain ChatML template instead", err)
	if b.template, err = tokenizer.CompileTemplate(tokenizer.PlainChatTemplate); err != nil {
		return "", err
	}
	return tokenizer.PlainChatTemplate, nil
}

// templateOrigin names where the chat template in use comes from.
func templateOrigin(flag string) string {
	if flag != "" {
		return "--chat-template"
	}
	return "the model's tokenizer.chat_template"
}

// aborted is the error of a request whose handler was cancelled: the engine's
// failure when it failed (the server stops), else a shutdown or a client that
// left.
func (b *backend) aborted() *apiError {
	if err := b.e.Failed(); err != nil {
		return engineError(err)
	}
	return unavailable(5, "the request was aborted: the server is shutting down or the client left")
}
