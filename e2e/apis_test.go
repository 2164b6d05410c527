package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// TestResponsesAndMessagesEndToEnd starts `pagoda serve smollm2` with an
// API key and a bounded responses store, and runs the official clients
// against it:
//
//   - responses_client.py: the openai client's responses.create (plain,
//     streamed, a function tool loop by function_call_output items and by
//     previous_response_id, text.format json_schema and responses.parse),
//     responses.stream, retrieve and delete, the 404 of a missing
//     previous_response_id; then openai-agents' default model (the Responses
//     API) running a tool loop, whole and streamed;
//   - messages_client.py: the anthropic client's messages.create (plain,
//     multi-turn with stop_sequences, streamed, a tool round trip whole and
//     streamed), messages.stream, count_tokens, and a 400 in Anthropic's
//     error shape, authenticating with x-api-key.
//
// SmolLM2-135M is weak: the clients check the protocol's shapes and round
// trips, not the answers. Then SIGTERM, which must exit 0.
func TestResponsesAndMessagesEndToEnd(t *testing.T) {
	testmodel.Default(t) // the cache holds the model `smollm2` resolves to
	python := apisVenv(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", "smollm2", "--port", strconv.Itoa(port),
		"--max-model-len", "2048", "--max-num-seqs", "4", "--shutdown-timeout", "20s", "--api-key", "sekret",
		"--responses-store-size", "8MiB", "--responses-store-ttl", "10m"))
	waitHealthy(t, base, srv)
	runLogged(t, "responses", exec.Command(python, "responses_client.py", "--base-url", base+"/v1", "--model", "smollm2",
		"--api-key", "sekret"))
	runLogged(t, "messages", exec.Command(python, "messages_client.py", "--base-url", base, "--model", "smollm2",
		"--api-key", "sekret"))
	srv.stop(t)
}

// apisVenv returns the python of a virtual environment with openai,
// openai-agents and anthropic at the pinned versions (see pythonVenv).
func apisVenv(t *testing.T) string {
	t.Helper()
	versions := strings.Join([]string{openaiVersion, openaiAgentsVersion, anthropicVersion}, "-")
	return pythonVenv(t, "apis-"+versions, "import openai, agents, anthropic",
		"openai=="+openaiVersion, "openai-agents=="+openaiAgentsVersion, "anthropic=="+anthropicVersion)
}
