package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
)

// o200kRanksFile is js-tiktoken's o200k_base ranks in the model cache (`make vocab` runs
// scripts/fetch-o200k-vocab.sh).
func o200kRanksFile(t testing.TB) string {
	t.Helper()
	return testmodel.Fetched(t, "make vocab", "ggml-vocab", "o200k_base.js")
}

// readO200kRanks parses js-tiktoken's rank file: a JS object whose "bpe_ranks" string holds
// groups "! OFFSET tok tok …", each token base64 and ranked OFFSET, OFFSET+1, ….
func readO200kRanks(t testing.TB, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const key = `"bpe_ranks":"`
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		t.Fatalf("%s: no bpe_ranks", path)
	}
	body := raw[i+len(key):]
	body = body[:bytes.IndexByte(body, '"')]
	var ranks [][]byte
	fields := strings.Fields(string(body))
	for j := 0; j < len(fields); j++ {
		if fields[j] == "!" {
			off, err := strconv.Atoi(fields[j+1])
			if err != nil || off != len(ranks) {
				t.Fatalf("%s: group at rank %d starts at %q", path, len(ranks), fields[j+1])
			}
			j++
			continue
		}
		tok, err := base64.StdEncoding.DecodeString(fields[j])
		if err != nil {
			t.Fatalf("%s: rank %d: %v", path, len(ranks), err)
		}
		ranks = append(ranks, tok)
	}
	return ranks
}

// harmonySpecials are o200k_harmony's named special tokens (OpenAI harmony's encoding, as
// gpt-oss's tokenizer lists them); the other ids from 199998 to 201087 are <|reserved_N|>.
var harmonySpecials = map[int]string{
	199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>", 200003: "<|constrain|>",
	200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>", 200008: "<|message|>", 200012: "<|call|>",
	200018: "<|endofprompt|>",
}

const harmonyVocabSize = 201088

// harmonyKVs is a gpt-oss style vocabulary-only GGUF's metadata: o200k_base's ranks as
// byte-level tokens, the merges llama.cpp's converter derives from tiktoken ranks (each
// token's two parts under BPE restricted to lower ranks, in rank order: convert_hf_to_gguf's
// QwenModel.bpe, as Hugging Face converts tiktoken files), and the harmony specials as
// control tokens.
func harmonyKVs(t testing.TB) map[string]any {
	t.Helper()
	ranks := readO200kRanks(t, o200kRanksFile(t))
	if len(ranks) != 199998 {
		t.Fatalf("%d ranks, want 199998", len(ranks))
	}
	rankOf := make(map[string]int, len(ranks))
	for r, tok := range ranks {
		rankOf[string(tok)] = r
	}
	tokens := make([]string, harmonyVocabSize)
	types := make([]int32, harmonyVocabSize)
	var merges []string
	for r, tok := range ranks {
		tokens[r] = string(byteEncode(nil, string(tok)))
		types[r] = int32(TypeNormal)
		if len(tok) == 1 {
			continue
		}
		parts := tiktokenParts(rankOf, tok, r)
		if len(parts) != 2 {
			t.Fatalf("rank %d (%q) splits into %d parts", r, tok, len(parts))
		}
		merges = append(merges, string(byteEncode(nil, string(parts[0])))+" "+string(byteEncode(nil, string(parts[1]))))
	}
	for id := len(ranks); id < harmonyVocabSize; id++ {
		name, ok := harmonySpecials[id]
		if !ok {
			name = fmt.Sprintf("<|reserved_%d|>", id)
		}
		tokens[id], types[id] = name, int32(TypeControl)
	}
	kvs := map[string]any{
		keyModel: "gpt2", keyPre: "gpt-4o", keyTokens: tokens, keyTokenType: types, keyMerges: merges,
		keyBOS: uint32(199998), keyEOS: uint32(200002), keyPAD: uint32(199999), keyAddBOS: false,
		// llama.cpp needs an architecture and its hyperparameters even for a vocabulary-only load.
		"general.architecture": "gpt2", "general.name": "o200k_harmony",
	}
	for k, v := range map[string]uint32{"block_count": 1, "context_length": 1024, "embedding_length": 64,
		"feed_forward_length": 256, "attention.head_count": 1} {
		kvs["gpt2."+k] = v
	}
	kvs["gpt2.attention.layer_norm_epsilon"] = float32(1e-5)
	return kvs
}

// tiktokenParts runs byte-level BPE on tok with the merges of rank below maxRank.
func tiktokenParts(rankOf map[string]int, tok []byte, maxRank int) [][]byte {
	parts := make([][]byte, len(tok))
	for i := range tok {
		parts[i] = tok[i : i+1]
	}
	for {
		best, bestRank := -1, maxRank
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := rankOf[string(parts[i])+string(parts[i+1])]; ok && r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			return parts
		}
		merged := append(slices.Clip(parts[best]), parts[best+1]...)
		parts = slices.Replace(parts, best, best+2, merged)
	}
}

// harmonyWriter is harmonyKVs in a GGUF writer (keys sorted for a reproducible file).
func harmonyWriter(t testing.TB) *gguf.Writer {
	t.Helper()
	kvs := harmonyKVs(t)
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w := gguf.NewWriter()
	for _, k := range keys {
		w.AddKV(k, kvs[k])
	}
	return w
}

// harmonyTokenizer is the o200k_harmony tokenizer read back from harmonyWriter's GGUF.
func harmonyTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cached(t, "o200k_harmony", func() *Tokenizer {
		f, err := harmonyWriter(t).File()
		if err != nil {
			t.Fatal(err)
		}
		tk, err := FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	})
}

// TestWriteHarmonyGGUF writes the vocabulary-only GGUF that scripts/gen-o200k-vectors.py
// hands to llama.cpp, to the path in PAGODA_WRITE_HARMONY_GGUF (skipped when unset).
func TestWriteHarmonyGGUF(t *testing.T) {
	path := os.Getenv("PAGODA_WRITE_HARMONY_GGUF")
	if path == "" {
		t.Skip("PAGODA_WRITE_HARMONY_GGUF unset")
	}
	if err := harmonyWriter(t).WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// o200kVectors are llama.cpp's ids for texts on the o200k_harmony vocabulary
// (scripts/gen-o200k-vectors.py).
type o200kVectors struct {
	RanksSHA256 string `json:"ranks_sha256"`
	Cases       []struct {
		Text         string  `json:"text"`
		ParseSpecial bool    `json:"parse_special"`
		IDs          []int32 `json:"ids"`
	} `json:"cases"`
}

// TestO200kHarmonyVectors checks pagoda's ids against llama.cpp's (llama-tokenize on the same
// vocabulary) for code, Unicode, numbers, whitespace runs, CJK, emoji, contractions and the
// harmony chat markers, and that the ids decode back to the text.
func TestO200kHarmonyVectors(t *testing.T) {
	var vs o200kVectors
	readJSON(t, "testdata/o200k.vectors.json", &vs)
	if len(vs.Cases) < 50 {
		t.Fatalf("only %d cases", len(vs.Cases))
	}
	raw, err := os.ReadFile(o200kRanksFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(raw)); sum != vs.RanksSHA256 {
		t.Fatalf("vectors made from ranks with sha256 %s, the cache holds %s", vs.RanksSHA256, sum)
	}
	tk := harmonyTokenizer(t)
	for i, c := range vs.Cases {
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			got := tk.Encode(c.Text, false, c.ParseSpecial)
			if !slices.Equal(got, c.IDs) {
				t.Fatalf("Encode(%q, parseSpecial=%v)\n got %v\nwant %v", c.Text, c.ParseSpecial, got, c.IDs)
			}
			if back := tk.Decode(got); back != c.Text {
				t.Errorf("decode: %q", back)
			}
		})
	}
}

// TestHarmonyEOG checks llama.cpp's o200k_harmony rules on the whole vocabulary: <|return|>,
// <|call|> and <|endoftext|> end generation, <|end|> does not; the message markers and <|end|>
// are user-defined, so decoding without special tokens keeps them and raw text parses them.
func TestHarmonyEOG(t *testing.T) {
	tk := harmonyTokenizer(t)
	id := func(s string) int32 {
		i, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("no %s", s)
		}
		return i
	}
	if got, want := tk.EOGs(), []int32{199999, 200002, 200012}; !slices.Equal(got, want) {
		t.Errorf("EOGs %v, want %v", got, want)
	}
	for _, s := range []string{"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>"} {
		if ty := tk.TokenType(id(s)); ty != TypeUserDefined {
			t.Errorf("%s has type %d", s, ty)
		}
	}
	text := "<|channel|>final<|message|>Hi<|end|>"
	ids := tk.Encode(text+"<|return|>", false, true)
	if back := tk.DecodeSkipSpecial(ids); back != text {
		t.Errorf("DecodeSkipSpecial = %q", back)
	}
}
