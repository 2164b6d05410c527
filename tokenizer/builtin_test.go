package tokenizer

import (
	"testing"
)

func TestBuiltinChatTemplate(t *testing.T) {
	for _, c := range []struct {
		arch string
		ok   bool
	}{{"gemma3", true}, {"llama", false}, {"", false}, {"../templates/gemma3", false}, {"gemma3.jinja", false}} {
		tmpl, ok := BuiltinChatTemplate(c.arch)
		if ok != c.ok || ok != (tmpl != "") {
			t.Errorf("%q: %d bytes, ok %v; want ok %v", c.arch, len(tmpl), ok, c.ok)
		}
	}
	tmpl, _ := BuiltinChatTemplate("gemma3")
	got, err := RenderChat(tmpl, []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, true, "<bos>", "<eos>")
	if err != nil {
		t.Fatal(err)
	}
	want := "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
	if got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}
