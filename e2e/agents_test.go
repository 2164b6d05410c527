package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// The Python packages of the agent end-to-end test, beside openaiVersion
// and langchainOpenAIVersion (those of TestStructuredEndToEnd).
const (
	langgraphVersion    = "1.2.22"
	openaiAgentsVersion = "0.24.0"
)

// TestAgentsEndToEnd starts `pagoda serve smollm2` as a user would, with no
// tool-calling flag and no --served-model-name, and runs agents_client.py:
// LangGraph's create_react_agent and the OpenAI Agents SDK's Runner.run,
// each with one Python tool and tool_choice left to its default (auto). The
// model calls the tool through the fallback prompt (its chat template
// ignores tools), the framework runs it and sends the result back, and the
// model answers from it; the client prints each step. It also sends a
// Pydantic tool whose schema uses $defs with tool_choice required. The
// model is named "smollm2", the reference on the command line. Then
// SIGTERM, which must exit 0.
func TestAgentsEndToEnd(t *testing.T) {
	testmodel.Default(t) // the cache holds the model `smollm2` resolves to
	python := agentsVenv(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", "smollm2", "--port", strconv.Itoa(port),
		"--max-model-len", "2048", "--max-num-seqs", "4", "--shutdown-timeout", "20s"))
	waitHealthy(t, base, srv)
	runLogged(t, "agents", exec.Command(python, "agents_client.py", "--base-url", base+"/v1", "--model", "smollm2"))
	srv.stop(t)
}

// agentsVenv returns the python of a virtual environment with openai,
// langchain-openai, langgraph and openai-agents at the pinned versions
// (see pythonVenv).
func agentsVenv(t *testing.T) string {
	t.Helper()
	versions := strings.Join([]string{openaiVersion, langchainOpenAIVersion, langgraphVersion, openaiAgentsVersion}, "-")
	return pythonVenv(t, "agents-"+versions, "import openai, langchain_openai, langgraph.prebuilt, agents",
		"openai=="+openaiVersion, "langchain-openai=="+langchainOpenAIVersion, "langgraph=="+langgraphVersion,
		"openai-agents=="+openaiAgentsVersion)
}
