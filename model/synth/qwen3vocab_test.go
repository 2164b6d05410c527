package synth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

// qwen3TemplateSHA256 is the sha256 of Qwen/Qwen3-0.6B's chat template
// (templates/README.md; tokenizer/testdata/templates/qwen3.jinja).
const qwen3TemplateSHA256 = "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

// smallQwen3 is a qwen3 shape whose 151936-row embeddings stay small.
var smallQwen3 = Shape{Arch: "qwen3", Name: "small", Dim: 64, HiddenDim: 128, Layers: 1, Heads: 2, KVHeads: 1, HeadSize: 32,
	VocabSize: 1000, ContextLen: 512, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true}

// openQwen2Vocab opens llama.cpp's ggml-vocab-qwen2.gguf from the model cache.
func openQwen2Vocab(t *testing.T) *gguf.File {
	t.Helper()
	v, err := gguf.Open(testmodel.Vocab(t, "qwen2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// tokenizerKeys lists f's tokenizer.* keys in file order.
func tokenizerKeys(f *gguf.File) []string {
	var keys []string
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			keys = append(keys, kv.Key)
		}
	}
	return keys
}

// TestQwen3Tokenizer: a qwen3 model on the Qwen2 BPE vocabulary gets
// Qwen3's tokenizer as llama.cpp's converter writes it: the BPE tokens
// and merges unchanged, the 26 added tokens at their ids and types, the
// rest UNUSED padding, the special ids, no BOS added, Qwen3's template,
// the keys in the converter's order.
func TestQwen3Tokenizer(t *testing.T) {
	v := openQwen2Vocab(t)
	f := buildParse(t, Options{Shape: smallQwen3, Type: gguf.Q8_0, Vocab: v, Seed: 1})
	wantKeys := []string{"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
		"tokenizer.ggml.merges", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.bos_token_id",
		"tokenizer.ggml.add_bos_token", "tokenizer.chat_template"}
	if got := tokenizerKeys(f); !slices.Equal(got, wantKeys) {
		t.Fatalf("tokenizer keys\n got %q\nwant %q", got, wantKeys)
	}
	base, _ := v.Strings("tokenizer.ggml.tokens")
	baseMerges, _ := v.Strings("tokenizer.ggml.merges")
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	if len(toks) != 151936 || len(types) != 151936 || !slices.Equal(toks[:151643], base[:151643]) || !slices.Equal(merges, baseMerges) {
		t.Fatalf("%d tokens, %d types, %d merges: want 151936, 151936 and the BPE's %d, the first 151643 tokens the BPE's",
			len(toks), len(types), len(merges), len(baseMerges))
	}
	if i := slices.IndexFunc(types[:151643], func(ty int32) bool { return ty != 1 }); i >= 0 {
		t.Fatalf("BPE token %d %q has type %d, want normal", i, toks[i], types[i])
	}
	added := map[int]struct {
		text string
		typ  int32
	}{151643: {"<|endoftext|>", 3}, 151644: {"<|im_start|>", 3}, 151645: {"<|im_end|>", 3}, 151654: {"<|vision_pad|>", 3},
		151657: {"<tool_call>", 4}, 151658: {"</tool_call>", 4}, 151659: {"<|fim_prefix|>", 3}, 151664: {"<|file_sep|>", 3},
		151665: {"<tool_response>", 4}, 151666: {"</tool_response>", 4}, 151667: {"<think>", 4}, 151668: {"</think>", 4}}
	for id := 151643; id < 151936; id++ {
		want, ok := added[id]
		switch {
		case ok && (toks[id] != want.text || types[id] != want.typ):
			t.Errorf("token %d: %q type %d, want %q type %d", id, toks[id], types[id], want.text, want.typ)
		case id < 151669 && !(strings.HasPrefix(toks[id], "<") && strings.HasSuffix(toks[id], ">")):
			t.Errorf("token %d: %q is not an added token", id, toks[id])
		case id >= 151669 && (toks[id] != "[PAD"+strconv.Itoa(id)+"]" || types[id] != tokenUnused):
			t.Errorf("token %d: %q type %d, want padding", id, toks[id], types[id])
		}
	}
	for key, want := range map[string]uint64{"eos_token_id": 151645, "padding_token_id": 151643, "bos_token_id": 151643} {
		if got, _ := f.Uint("tokenizer.ggml." + key); got != want {
			t.Errorf("%s %d, want %d", key, got, want)
		}
	}
	if add, ok := f.Value("tokenizer.ggml.add_bos_token"); add != false || !ok {
		t.Errorf("add_bos_token %v", add)
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	if sum := sha256.Sum256([]byte(tmpl)); hex.EncodeToString(sum[:]) != qwen3TemplateSHA256 {
		t.Errorf("chat template sha256 %x, want Qwen3-0.6B's %s", sum, qwen3TemplateSHA256)
	}
	if info, _ := f.TensorInfo("token_embd.weight"); info.Dims[1] != 151936 {
		t.Errorf("embeddings %v, want 151936 rows", info.Dims)
	}
}

// TestQwen3TokenizerInPagoda: pagoda's tokenizer reads the written
// tokenizer as Qwen3's: the markers are single tokens even in plain text
// (USER_DEFINED, as llama.cpp splits them), <|im_end|> ends generation, no
// BOS is added, and the template renders thinking on and off.
func TestQwen3TokenizerInPagoda(t *testing.T) {
	f := buildParse(t, Options{Shape: smallQwen3, Type: gguf.Q8_0, Vocab: openQwen2Vocab(t), Seed: 1})
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	for text, id := range map[string]int32{"<think>": 151667, "</think>": 151668, "<tool_call>": 151657, "<|im_end|>": 151645} {
		if got, ok := tok.TokenID(text); !ok || got != id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", text, got, ok, id)
		}
	}
	ids := tok.Encode("<think>\nhm\n</think>\n\n<tool_call>", true, false)
	if len(ids) < 3 || ids[0] != 151667 || ids[len(ids)-1] != 151657 || !slices.Contains(ids, 151668) {
		t.Errorf("plain-text markers encode to %v: want <think> … </think> … <tool_call> as single tokens", ids)
	}
	if ids := tok.Encode("<|im_start|>", true, false); slices.Contains(ids, 151644) {
		t.Errorf("a control token parsed from plain text: %v", ids)
	}
	if tok.AddBOS() || !tok.IsEOG(151645) || !tok.IsEOG(151643) || tok.EOS() != 151645 {
		t.Errorf("add BOS %v, EOS %d, EOG <|im_end|> %v, <|endoftext|> %v", tok.AddBOS(), tok.EOS(), tok.IsEOG(151645), tok.IsEOG(151643))
	}
	tpl, err := tokenizer.CompileTemplate(tok.ChatTemplate())
	if err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "user", Content: "Hi"}}
	for _, c := range []struct {
		vars map[string]any
		want string
	}{
		{nil, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{map[string]any{"enable_thinking": false}, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	} {
		got, err := tpl.Render(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true, Vars: c.vars})
		if err != nil || got != c.want {
			t.Errorf("render with %v: %q, %v; want %q", c.vars, got, err, c.want)
		}
	}
}

// TestQwen3TokenizerOnlyQwen3: other families copy the Qwen2 vocabulary as
// it is, and a qwen3 model on another vocabulary copies that one.
func TestQwen3TokenizerOnlyQwen3(t *testing.T) {
	v := openQwen2Vocab(t)
	qwen2 := smallQwen3
	qwen2.Arch, qwen2.HeadSize = "qwen2", 0
	f := buildParse(t, Options{Shape: qwen2, Type: gguf.Q8_0, Vocab: v, Seed: 1})
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	tmpl, _ := f.String("tokenizer.chat_template")
	vtmpl, _ := v.String("tokenizer.chat_template")
	if !slices.Equal(tokenizerKeys(f), tokenizerKeys(v)) || toks[151667] != "[PAD151667]" || tmpl != vtmpl {
		t.Fatalf("qwen2 on the Qwen2 vocabulary: keys %q, token 151667 %q: want the file's tokenizer as it is", tokenizerKeys(f), toks[151667])
	}
	w := gguf.NewWriter()
	w.AddKV("tokenizer.ggml.model", "gpt2")
	w.AddKV("tokenizer.ggml.pre", "smollm")
	w.AddKV("tokenizer.ggml.tokens", []string{"a", "b", "<|endoftext|>"})
	w.AddKV("tokenizer.ggml.token_type", []int32{1, 1, 3})
	w.AddKV("tokenizer.ggml.merges", []string{"a b"})
	other, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	s := tinyQwen3
	s.VocabSize = 3
	f = buildParse(t, Options{Shape: s, Type: gguf.Q8_0, Vocab: other, Seed: 1})
	if toks, _ := f.Strings("tokenizer.ggml.tokens"); !slices.Equal(toks, []string{"a", "b", "<|endoftext|>"}) {
		t.Fatalf("qwen3 on another vocabulary: tokens %q", toks)
	}
}

// TestQwen3TokenizerDeterministic: the same options give the same bytes
// whatever the number of workers.
func TestQwen3TokenizerDeterministic(t *testing.T) {
	v := openQwen2Vocab(t)
	write := func(workers int) []byte {
		w, err := Build(Options{Shape: smallQwen3, Type: gguf.Q8_0, Vocab: v, Seed: 1, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if !bytes.Equal(write(1), write(2)) {
		t.Fatal("one and two workers wrote different bytes")
	}
}

// TestQwen3Template: the embedded template is Qwen3-0.6B's, byte for byte.
func TestQwen3Template(t *testing.T) {
	if sum := sha256.Sum256([]byte(qwen3ChatTemplate)); hex.EncodeToString(sum[:]) != qwen3TemplateSHA256 {
		t.Fatalf("templates/qwen3.jinja sha256 %x, want %s", sum, qwen3TemplateSHA256)
	}
}
