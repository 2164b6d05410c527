package e2e

import (
	"os/exec"
	"strconv"
	"testing"

	"pagoda/internal/testmodel"
)

// TestOllamaEndToEnd starts `pagoda serve smollm2` as a user would and runs
// ollama_client.py: Ollama's official Python client (list, show, ps, chat
// streamed and not, format, tools, generate with its context, embed,
// embeddings, pull) and the OpenAI client's embeddings.create against it,
// unchanged but for the host. Then SIGTERM, which must exit 0.
func TestOllamaEndToEnd(t *testing.T) {
	testmodel.Default(t) // the cache holds the model `smollm2` resolves to
	python := ollamaVenv(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", "smollm2", "--port", strconv.Itoa(port),
		"--max-model-len", "2048", "--max-num-seqs", "4", "--shutdown-timeout", "20s"))
	waitHealthy(t, base, srv)
	runLogged(t, "ollama client", exec.Command(python, "ollama_client.py", "--base-url", base, "--model", "smollm2"))
	srv.stop(t)
}
