package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// TokenType is a token's tokenizer.ggml.token_type value.
type TokenType int32

// Token types, numbered as in GGUF.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// NoToken marks an absent special token id.
const NoToken int32 = -1

// Model names accepted in Config.Model (the values of tokenizer.ggml.model).
const (
	ModelSPM = "llama" // SentencePiece-style BPE over scores
	ModelBPE = "gpt2"  // byte-level BPE over merge ranks
	// ModelWPM ("bert", wpm.go) is WordPiece.
)

// ErrInvalidVocab is wrapped by every error New and FromGGUF return for bad metadata.
var ErrInvalidVocab = errors.New("tokenizer: invalid vocabulary")

// Config describes a vocabulary. FromGGUF fills it from tokenizer.ggml.* metadata; tests and
// tools may build one directly. Special ids are NoToken when absent.
type Config struct {
	Model  string      // ModelSPM, ModelBPE or ModelWPM
	Pre    string      // pre-tokenizer name (BPE only); "" means "default"
	Tokens []string    // (n_vocab) token texts, unique
	Scores []float32   // (n_vocab) merge scores; required for SPM, ignored for BPE
	Types  []TokenType // (n_vocab) token types; nil means all TypeNormal
	Merges []string    // "left right" pairs in rank order; required for BPE

	BOS, EOS, UNK, PAD, EOT, EOM, SEP int32

	AddBOS, AddEOS, AddSpacePrefix bool

	// KeepCase and KeepAccents turn off WordPiece's lower-casing and accent
	// stripping (tokenizer.ggml.normalizer.lowercase / strip_accents false).
	KeepCase, KeepAccents bool

	// Name is general.name; llama.cpp strips spaces after special tokens for Phi-3 models.
	Name         string
	ChatTemplate string
	// BuiltinChatTemplate reports that ChatTemplate is pagoda's own for the
	// architecture (BuiltinChatTemplate), the file having none.
	BuiltinChatTemplate bool
}

// validate checks sizes and ids; errors name the GGUF key the field comes from.
func (c *Config) validate() error {
	n := len(c.Tokens)
	switch {
	case c.Model != ModelSPM && c.Model != ModelBPE && c.Model != ModelWPM:
		return vocabErr(keyModel, "unsupported tokenizer model %q (want %q, %q or %q)", c.Model, ModelSPM, ModelBPE, ModelWPM)
	case n == 0:
		return vocabErr(keyTokens, "no tokens")
	case n > 1<<31-1:
		return vocabErr(keyTokens, "%d tokens do not fit int32 ids", n)
	case c.Model == ModelSPM && len(c.Scores) != n:
		return vocabErr(keyScores, "%d scores for %d tokens", len(c.Scores), n)
	case c.Types != nil && len(c.Types) != n:
		return vocabErr(keyTokenType, "%d token types for %d tokens", len(c.Types), n)
	case c.Model == ModelBPE && c.Merges == nil:
		return vocabErr(keyMerges, "missing (required for %q vocabularies)", ModelBPE)
	}
	for i, t := range c.Types {
		if t < TypeUndefined || t > TypeByte {
			return vocabErr(keyTokenType, "token %d has unknown type %d", i, t)
		}
	}
	ids := []struct {
		key string
		id  int32
	}{{keyBOS, c.BOS}, {keyEOS, c.EOS}, {keyUNK, c.UNK}, {keyPAD, c.PAD}, {keyEOT, c.EOT}, {keyEOM, c.EOM}, {keySEP, c.SEP}}
	for _, s := range ids {
		if s.id != NoToken && (s.id < 0 || int(s.id) >= n) {
			return vocabErr(s.key, "id %d out of range [0, %d)", s.id, n)
		}
	}
	if c.AddBOS && c.BOS == NoToken {
		return vocabErr(keyAddBOS, "set but %s is absent", keyBOS)
	}
	if c.AddEOS && c.EOS == NoToken {
		return vocabErr(keyAddEOS, "set but %s is absent", keyEOS)
	}
	return nil
}

func vocabErr(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidVocab, key, fmt.Sprintf(format, args...))
}

// merge is one BPE merge rule: the pair's rank (lower merges first) and the merged token.
type merge struct {
	rank int32
	id   int32
}

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// buildIndex fills the text→id map and the type table, renaming empty tokens like llama.cpp.
func (t *Tokenizer) buildIndex(c *Config) error {
	n := len(c.Tokens)
	t.tokens = make([]string, n)
	t.types = make([]TokenType, n)
	t.ids = make(map[string]int32, n)
	for i, s := range c.Tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if j, dup := t.ids[s]; dup {
			return vocabErr(keyTokens, "token %q appears at ids %d and %d", s, j, i)
		}
		t.ids[s] = int32(i)
		t.tokens[i] = s
		t.types[i] = TypeNormal
		if c.Types != nil {
			t.types[i] = c.Types[i]
		}
	}
	if c.Model == ModelSPM {
		t.scores = slices.Clone(c.Scores) // the Tokenizer must not change if the caller's slice does
	}
	return nil
}

// buildMerges parses "left right" merge rules. A rule is split at the first space after its
// first byte (as llama.cpp does); rules whose parts or result are not tokens can never apply
// to token symbols and are dropped.
func (t *Tokenizer) buildMerges(merges []string) error {
	t.merges = make(map[uint64]merge, len(merges))
	for rank, m := range merges {
		sp := strings.IndexByte(m[min(1, len(m)):], ' ')
		if sp < 0 {
			return vocabErr(keyMerges, "rule %d (%q) has no space", rank, m)
		}
		sp += min(1, len(m))
		left, right := m[:sp], m[sp+1:]
		l, okL := t.ids[left]
		r, okR := t.ids[right]
		res, okRes := t.ids[left+right]
		if !okL || !okR || !okRes {
			continue
		}
		k := pairKey(l, r)
		if _, seen := t.merges[k]; !seen {
			t.merges[k] = merge{rank: int32(rank), id: res}
		}
	}
	return nil
}

// buildByteTokens finds the token of each byte: <0xNN> (SPM byte fallback) or, for byte-level
// BPE, the token whose text is the byte's GPT-2 character. Missing bytes map to NoToken.
func (t *Tokenizer) buildByteTokens() {
	for b := range 256 {
		t.byteTok[b] = NoToken
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteTok[b] = id
			continue
		}
		var key string
		if t.model == ModelBPE {
			key = string(byteToRune[b])
		} else {
			key = string([]byte{byte(b)})
		}
		if id, ok := t.ids[key]; ok {
			t.byteTok[b] = id
		}
	}
}

// buildSpecial lists the tokens matched in raw text before tokenization (control, user-defined
// and unknown), longest text first, and sets llama.cpp's strip attributes.
func (t *Tokenizer) buildSpecial(c *Config) {
	for id, ty := range t.types {
		if ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown {
			t.special = append(t.special, int32(id))
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.tokens[t.special[a]]) > len(t.tokens[t.special[b]])
	})
	name := strings.ToLower(c.Name)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		// Phi-3's special tokens swallow the whitespace that follows them.
		t.rstrip = make(map[int32]bool)
		for _, id := range t.special {
			t.rstrip[id] = true
		}
		if id, ok := t.ids["</s>"]; ok {
			t.rstrip[id] = true
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.ids[s]; ok {
				delete(t.rstrip, id)
			}
		}
	}
}

// eotTexts are the texts llama.cpp recognises as end-of-turn when tokenizer.ggml.eot_token_id
// is absent, in order of preference.
var eotTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "<end_of_utterance>",
}

// eogTexts are the texts of tokens that end generation (llama.cpp's list, the common ones;
// <|return|> and <|call|> are o200k_harmony's, gpt-oss's).
var eogTexts = append([]string{"<|eom_id|>", "<|return|>", "<|call|>"}, eotTexts...)

// harmonyMarkers are o200k_harmony's message markers, which llama.cpp retypes user-defined so
// that they are rendered in generated text (the harmony output parser reads them) and are
// recognised in raw text even without special-token parsing.
var harmonyMarkers = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}

// buildEOG detects EOT/EOM by text when the metadata lacks them and builds the set of
// end-of-generation ids: EOS, EOT, EOM and every token whose text is in eogTexts. Like
// llama.cpp, an end token found by its text that is typed normal is retyped control.
func (t *Tokenizer) buildEOG() {
	if t.eot == NoToken {
		for _, s := range eotTexts {
			if id, ok := t.ids[s]; ok {
				t.eot = id
				break
			}
		}
	}
	if id, ok := t.ids["<|eom_id|>"]; ok && t.eom == NoToken {
		t.eom = id
	}
	t.eog = make(map[int32]bool)
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok {
			t.eog[id] = true
			if t.types[id] == TypeNormal {
				t.types[id] = TypeControl
			}
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
	t.harmonyTypes()
}

// harmonyTypes applies llama.cpp's o200k_harmony workaround (llama-vocab.cpp): in a vocabulary
// with <|return|>, <|call|> and <|end|>, <|end|> ends a message, not the generation, so it
// leaves the end-of-generation set (and stops being EOT) and, like the message markers,
// becomes user-defined.
func (t *Tokenizer) harmonyTypes() {
	for _, s := range harmonyMarkers {
		if id, ok := t.ids[s]; ok {
			t.types[id] = TypeUserDefined
		}
	}
	ret, okRet := t.ids["<|return|>"]
	call, okCall := t.ids["<|call|>"]
	end, okEnd := t.ids["<|end|>"]
	if !okRet || !okCall || !okEnd || !t.eog[ret] || !t.eog[call] {
		return
	}
	delete(t.eog, end)
	t.types[end] = TypeUserDefined
	if t.eot == end {
		t.eot = NoToken
	}
}
