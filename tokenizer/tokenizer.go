// Package tokenizer turns text into token ids and back for GGUF vocabularies, following
// llama.cpp's behaviour: SentencePiece-style BPE over scores (tokenizer.ggml.model "llama") and
// GPT-2 byte-level BPE over merge ranks ("gpt2") with the pre-tokenizer that
// tokenizer.ggml.pre names, and BERT's WordPiece ("bert", wpm.go). It also renders chat templates, detokenizes incrementally without
// splitting UTF-8 characters, and matches stop strings across streamed text.
//
// A Tokenizer is immutable after construction and safe for concurrent use.
package tokenizer

// Tokenizer encodes and decodes text for one vocabulary.
//
// Invariants: tokens, types and pieces have one entry per id; ids maps every token text to its
// id; special lists the control, user-defined and unknown ids, longest text first.
type Tokenizer struct {
	model  string
	pre    string
	tokens []string    // (n_vocab) token texts
	types  []TokenType // (n_vocab)
	scores []float32   // (n_vocab) SPM merge scores; nil for BPE
	pieces []string    // (n_vocab) the bytes each token decodes to
	ids    map[string]int32

	merges       map[uint64]merge // BPE: (left id, right id) → rule
	ignoreMerges bool             // BPE: a whole pre-token that is a token is kept as is
	pretok       []splitter       // BPE pre-tokenizer pipeline
	byteTok      [256]int32       // byte → its token, NoToken if none

	special []int32        // ids matched in raw text, longest text first
	rstrip  map[int32]bool // special ids that swallow following whitespace

	bos, eos, unk, pad, eot, eom, sep int32
	eog                               map[int32]bool

	maxCover  int       // the most input bytes one token stands for
	droppable [256]bool // bytes that may give no token at all

	addBOS, addEOS, addSpacePrefix bool

	// WordPiece (wpm.go): the normaliser, the longest token in bytes, and [SEP]
	// appended after the text with the special tokens.
	lowercase, stripAccents, addSEP bool
	maxTokenLen                     int
	chatTemplate                    string
}

// New builds a tokenizer from a vocabulary description.
func New(c Config) (*Tokenizer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	t := &Tokenizer{
		model: c.Model, pre: c.Pre,
		bos: c.BOS, eos: c.EOS, unk: c.UNK, pad: c.PAD, eot: c.EOT, eom: c.EOM, sep: c.SEP,
		addBOS: c.AddBOS, addEOS: c.AddEOS, addSpacePrefix: c.AddSpacePrefix,
		chatTemplate: c.ChatTemplate,
	}
	if c.Model == ModelWPM {
		t.lowercase, t.stripAccents, t.addSEP = !c.KeepCase, !c.KeepAccents, t.sep != NoToken
		for _, s := range c.Tokens {
			t.maxTokenLen = max(t.maxTokenLen, len(s))
		}
	}
	if err := t.buildIndex(&c); err != nil {
		return nil, err
	}
	t.buildEOG()
	t.buildSpecial(&c)
	t.buildByteTokens()
	t.buildPieces()
	t.buildCover()
	if t.model == ModelBPE {
		if t.pre == "" {
			t.pre = "default"
		}
		pretok, ignoreMerges, err := preTokenizer(t.pre)
		if err != nil {
			return nil, err
		}
		t.pretok, t.ignoreMerges = pretok, ignoreMerges
		if err := t.buildMerges(c.Merges); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Model is the tokenizer model: ModelSPM or ModelBPE.
func (t *Tokenizer) Model() string { return t.model }

// Pre is the BPE pre-tokenizer name ("" for SPM).
func (t *Tokenizer) Pre() string {
	if t.model == ModelSPM {
		return ""
	}
	return t.pre
}

// BOS is the beginning-of-sequence id, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT is the end-of-turn id, or NoToken.
func (t *Tokenizer) EOT() int32 { return t.eot }

// EOM is the end-of-message id, or NoToken.
func (t *Tokenizer) EOM() int32 { return t.eom }

// UNK is the unknown-token id, or NoToken.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD is the padding id, or NoToken.
func (t *Tokenizer) PAD() int32 { return t.pad }

// SEP is the separator id, or NoToken.
func (t *Tokenizer) SEP() int32 { return t.sep }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// ChatTemplate is the tokenizer.chat_template metadata ("" when absent).
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// IsEOG reports whether id ends generation: EOS, EOT, EOM or another end-of-turn token.
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// EOGs returns the end-of-generation ids in ascending order.
func (t *Tokenizer) EOGs() []int32 {
	out := make([]int32, 0, len(t.eog))
	for id := range t.tokens {
		if t.eog[int32(id)] {
			out = append(out, int32(id))
		}
	}
	return out
}

// valid reports whether id is a token id.
func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

// TokenText is the vocabulary text of id ("" for an invalid id).
func (t *Tokenizer) TokenText(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// TokenType is the type of id (TypeUndefined for an invalid id).
func (t *Tokenizer) TokenType(id int32) TokenType {
	if !t.valid(id) {
		return TypeUndefined
	}
	return t.types[id]
}

// TokenID returns the id whose vocabulary text is exactly s.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// IsSpecial reports whether id is a control or unknown token: one that decoding may skip.
func (t *Tokenizer) IsSpecial(id int32) bool {
	ty := t.TokenType(id)
	return ty == TypeControl || ty == TypeUnknown
}
