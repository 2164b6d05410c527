package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pagoda/gguf"
)

// tinySPM is a SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte tokens, then
// a few pieces. "ab" and "bc" have equal scores so ties show (leftmost wins).
func tinySPM() Config {
	c := Config{Model: ModelSPM, BOS: 1, EOS: 2, UNK: 0, PAD: NoToken, EOT: NoToken, EOM: NoToken, SEP: NoToken,
		AddBOS: true, AddSpacePrefix: true}
	add := func(text string, score float32, ty TokenType) {
		c.Tokens = append(c.Tokens, text)
		c.Scores = append(c.Scores, score)
		c.Types = append(c.Types, ty)
	}
	add("<unk>", 0, TypeUnknown)
	add("<s>", 0, TypeControl)
	add("</s>", 0, TypeControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, TypeByte)
	}
	for i, p := range []string{"▁", "a", "b", "c", "▁a", "ab", "bc", "▁ab", "<x>"} {
		add(p, -float32(i), TypeNormal)
	}
	c.Scores[len(c.Scores)-3] = c.Scores[len(c.Scores)-4] // bc ties with ab
	c.Types[len(c.Types)-1] = TypeUserDefined             // <x>
	return c
}

// tinyBPE is a byte-level BPE vocabulary: the 256 byte characters, merges building "hello"
// and "Ġw", control tokens <|x|>, <|y|> and <|x|><|y|>, and the user-defined token @@.
func tinyBPE() Config {
	c := Config{Model: ModelBPE, Pre: "gpt-2", BOS: NoToken, EOS: NoToken, UNK: NoToken, PAD: NoToken,
		EOT: NoToken, EOM: NoToken, SEP: NoToken}
	for b := range 256 {
		c.Tokens = append(c.Tokens, string(byteToRune[b]))
		c.Types = append(c.Types, TypeNormal)
	}
	c.Merges = []string{"h e", "l l", "he ll", "hell o", "Ġ w"}
	for _, m := range c.Merges {
		c.Tokens = append(c.Tokens, strings.Replace(m, " ", "", 1))
		c.Types = append(c.Types, TypeNormal)
	}
	for _, s := range []struct {
		text string
		ty   TokenType
	}{{"<|x|>", TypeControl}, {"<|y|>", TypeControl}, {"<|x|><|y|>", TypeControl}, {"@@", TypeUserDefined}} {
		c.Tokens = append(c.Tokens, s.text)
		c.Types = append(c.Types, s.ty)
	}
	return c
}

func mustNew(t testing.TB, c Config) *Tokenizer {
	t.Helper()
	tk, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// ggufOf writes kvs to an in-memory GGUF and parses it back.
func ggufOf(t *testing.T, kvs map[string]any) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for k, v := range kvs {
		w.AddKV(k, v)
	}
	f, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// spmKVs is tinySPM as GGUF metadata.
func spmKVs() map[string]any {
	c := tinySPM()
	types := make([]int32, len(c.Types))
	for i, ty := range c.Types {
		types[i] = int32(ty)
	}
	return map[string]any{
		keyModel: "llama", keyTokens: c.Tokens, keyScores: c.Scores, keyTokenType: types,
		keySEP: uint32(0xFFFFFFFF), keyPAD: int32(-1),
	}
}

func bpeKVs() map[string]any {
	c := tinyBPE()
	return map[string]any{keyModel: "gpt2", keyPre: "gpt-2", keyTokens: c.Tokens, keyMerges: c.Merges}
}

func TestFromGGUFErrors(t *testing.T) {
	cases := []struct {
		name   string
		base   func() map[string]any
		edit   func(map[string]any)
		errKey string
	}{
		{"missing model", spmKVs, func(m map[string]any) { delete(m, keyModel) }, keyModel},
		{"model not a string", spmKVs, func(m map[string]any) { m[keyModel] = uint32(1) }, keyModel},
		{"unsupported model", spmKVs, func(m map[string]any) { m[keyModel] = "ugm" }, keyModel},
		{"missing tokens", spmKVs, func(m map[string]any) { delete(m, keyTokens) }, keyTokens},
		{"tokens not strings", spmKVs, func(m map[string]any) { m[keyTokens] = []int32{1, 2} }, keyTokens},
		{"empty tokens", spmKVs, func(m map[string]any) { m[keyTokens] = []string{} }, keyTokens},
		{"duplicate token", spmKVs, func(m map[string]any) { m[keyTokens].([]string)[5] = "a" }, keyTokens},
		{"missing scores", spmKVs, func(m map[string]any) { delete(m, keyScores) }, keyScores},
		{"short scores", spmKVs, func(m map[string]any) { m[keyScores] = []float32{0, 1} }, keyScores},
		{"scores of strings", spmKVs, func(m map[string]any) { m[keyScores] = []string{"x"} }, keyScores},
		{"short token types", spmKVs, func(m map[string]any) { m[keyTokenType] = []int32{1} }, keyTokenType},
		{"bad token type", spmKVs, func(m map[string]any) { m[keyTokenType].([]int32)[7] = 9 }, keyTokenType},
		{"bos out of range", spmKVs, func(m map[string]any) { m[keyBOS] = uint32(100000) }, keyBOS},
		{"eos not an integer", spmKVs, func(m map[string]any) { m[keyEOS] = "2" }, keyEOS},
		{"add_bos not a bool", spmKVs, func(m map[string]any) { m[keyAddBOS] = uint8(1) }, keyAddBOS},
		{"add_eos without eos", bpeKVs, func(m map[string]any) { m[keyAddEOS] = true }, keyAddEOS},
		{"pre not a string", bpeKVs, func(m map[string]any) { m[keyPre] = int32(3) }, keyPre},
		{"unsupported pre", bpeKVs, func(m map[string]any) { m[keyPre] = "klingon" }, keyPre},
		{"missing merges", bpeKVs, func(m map[string]any) { delete(m, keyMerges) }, keyMerges},
		{"merge without space", bpeKVs, func(m map[string]any) { m[keyMerges] = []string{"h e", "ll"} }, keyMerges},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kvs := c.base()
			c.edit(kvs)
			_, err := FromGGUF(ggufOf(t, kvs))
			if !errors.Is(err, ErrInvalidVocab) || !strings.Contains(err.Error(), c.errKey) {
				t.Fatalf("got %v, want an ErrInvalidVocab naming %s", err, c.errKey)
			}
		})
	}
}

func TestFromGGUFDefaults(t *testing.T) {
	spm, err := FromGGUF(ggufOf(t, spmKVs()))
	if err != nil {
		t.Fatal(err)
	}
	bpeKV := bpeKVs()
	bpeKV[keyPre] = "llama-bpe"
	bpe, err := FromGGUF(ggufOf(t, bpeKV))
	if err == nil || !strings.Contains(err.Error(), keyAddBOS) {
		t.Fatalf("llama-bpe adds BOS by default, so a vocabulary without BOS must fail: %v", err)
	}
	bpeKV[keyBOS] = uint32(3)
	if bpe, err = FromGGUF(ggufOf(t, bpeKV)); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"spm BOS", spm.BOS(), int32(1)},
		{"spm EOS", spm.EOS(), int32(2)},
		{"spm UNK", spm.UNK(), int32(0)},
		{"spm SEP 0xFFFFFFFF is none", spm.SEP(), NoToken},
		{"spm PAD -1 is none", spm.PAD(), NoToken},
		{"spm AddBOS", spm.AddBOS(), true},
		{"spm space prefix", spm.Decode(spm.Encode("a", false, false)), "a"},
		{"spm encode", fmt.Sprint(spm.Encode("a", true, false)), "[1 263]"},
		{"spm pre", spm.Pre(), ""},
		{"bpe AddBOS (llama3 family)", bpe.AddBOS(), true},
		{"bpe BOS", bpe.BOS(), int32(3)},
		{"bpe pre", bpe.Pre(), "llama-bpe"},
		{"bpe model", bpe.Model(), ModelBPE},
		{"vocab size", spm.VocabSize(), 259 + 9},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestAccessorsOnInvalidIDs(t *testing.T) {
	tk := mustNew(t, tinyBPE())
	for _, id := range []int32{-1, int32(tk.VocabSize()), 1 << 30} {
		if tk.TokenText(id) != "" || tk.Piece(id) != "" || tk.TokenType(id) != TypeUndefined || tk.IsEOG(id) || tk.IsSpecial(id) {
			t.Errorf("id %d: accessors should report nothing", id)
		}
	}
	if got := tk.Decode([]int32{-5, 256, 99999}); got != "he" {
		t.Errorf("Decode skips invalid ids: got %q", got)
	}
	if id, ok := tk.TokenID("hello"); !ok || tk.TokenText(id) != "hello" {
		t.Errorf("TokenID(hello) = %d, %v", id, ok)
	}
}
