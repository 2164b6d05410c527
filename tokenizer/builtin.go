package tokenizer

import (
	"embed"
	"strings"
)

//go:embed templates/*.jinja
var builtinTemplates embed.FS

// BuiltinChatTemplate returns pagoda's own chat template for a model
// architecture (general.architecture) whose GGUF carries none, and whether
// it has one: the family's instruction-tuned template (templates/).
func BuiltinChatTemplate(arch string) (string, bool) {
	if arch == "" || strings.ContainsAny(arch, "/.") {
		return "", false
	}
	b, err := builtinTemplates.ReadFile("templates/" + arch + ".jinja")
	if err != nil {
		return "", false
	}
	return string(b), true
}
