package server

import (
	_ "embed"
	"net/http"
)

// chatPage is the chat page served at GET /: one static file, its script
// and style inline, no external assets (neither the server nor the
// browser may reach the internet). It streams replies from
// /v1/chat/completions, picks a model from /v1/models, takes a system
// prompt and an API key (kept in the browser's localStorage), stops a
// reply, copies one, renders the answer's markdown and folds the
// reasoning of thinking models (reasoning_content).
//
//go:embed ui/index.html
var chatPage []byte

// serveChatPage serves the chat page. It is open (no API key): it holds
// nothing but the page; its requests to the API carry the key the user
// gives it.
func serveChatPage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:")
	w.WriteHeader(http.StatusOK)
	w.Write(chatPage)
}
