package tokenizer

import (
	"math"

	"pagoda/gguf"
)

// GGUF metadata keys read by FromGGUF.
const (
	keyModel        = "tokenizer.ggml.model"
	keyPre          = "tokenizer.ggml.pre"
	keyTokens       = "tokenizer.ggml.tokens"
	keyScores       = "tokenizer.ggml.scores"
	keyTokenType    = "tokenizer.ggml.token_type"
	keyMerges       = "tokenizer.ggml.merges"
	keyBOS          = "tokenizer.ggml.bos_token_id"
	keyEOS          = "tokenizer.ggml.eos_token_id"
	keyUNK          = "tokenizer.ggml.unknown_token_id"
	keyPAD          = "tokenizer.ggml.padding_token_id"
	keyEOT          = "tokenizer.ggml.eot_token_id"
	keyEOM          = "tokenizer.ggml.eom_token_id"
	keySEP          = "tokenizer.ggml.seperator_token_id" // sic: llama.cpp's spelling
	keyAddBOS       = "tokenizer.ggml.add_bos_token"
	keyAddEOS       = "tokenizer.ggml.add_eos_token"
	keySpacePrefix  = "tokenizer.ggml.add_space_prefix"
	keyChatTemplate = "tokenizer.chat_template"
	keyName         = "general.name"
)

// Load builds the tokenizer of the GGUF file at path (FromGGUF on its
// metadata; the file is closed before it returns).
func Load(path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromGGUF(f)
}

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.* metadata, with
// llama.cpp's defaults for absent keys: SPM vocabularies default to BOS 1, EOS 2, UNK 0,
// add_bos_token and add_space_prefix true; BPE vocabularies add nothing and have no space
// prefix (llama3-family pre-tokenizers add BOS by default). Errors name the offending key.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	c := Config{BOS: NoToken, EOS: NoToken, UNK: NoToken, PAD: NoToken, EOT: NoToken, EOM: NoToken, SEP: NoToken}
	var ok bool
	if c.Model, ok = f.String(keyModel); !ok {
		return nil, missingOrTyped(f, keyModel, "a string")
	}
	if c.Tokens, ok = f.Strings(keyTokens); !ok {
		return nil, missingOrTyped(f, keyTokens, "an array of strings")
	}
	if err := readOptional(f, &c); err != nil {
		return nil, err
	}
	switch c.Model {
	case ModelSPM:
		c.BOS, c.EOS, c.UNK = 1, 2, 0
		c.AddBOS, c.AddSpacePrefix = true, true
		if _, present := f.Value(keyScores); !present {
			return nil, vocabErr(keyScores, "missing (required for %q vocabularies)", ModelSPM)
		}
	case ModelBPE:
		if c.Merges, ok = f.Strings(keyMerges); !ok {
			return nil, missingOrTyped(f, keyMerges, "an array of strings")
		}
		c.AddBOS = llama3Family[c.Pre]
	case ModelWPM: // llama.cpp's defaults: [CLS] 101 as BOS, [UNK] 100, [SEP] 102, [PAD] 0
		c.BOS, c.UNK, c.SEP, c.PAD = 101, 100, 102, 0
		c.AddBOS = true
		if err := readNormalizer(f, &c); err != nil {
			return nil, err
		}
	}
	if err := readSpecialIDs(f, &c); err != nil {
		return nil, err
	}
	if err := readFlags(f, &c); err != nil {
		return nil, err
	}
	return New(c)
}

// readOptional reads the keys whose absence needs no default: pre, scores, types, names.
func readOptional(f *gguf.File, c *Config) error {
	var ok bool
	if _, present := f.Value(keyPre); present {
		if c.Pre, ok = f.String(keyPre); !ok {
			return vocabErr(keyPre, "not a string")
		}
	}
	if _, present := f.Value(keyScores); present {
		if c.Scores, ok = f.Float32s(keyScores); !ok {
			ints, isInt := f.Int32s(keyScores)
			if !isInt {
				return vocabErr(keyScores, "not an array of float32 or int32")
			}
			c.Scores = convert[float32](ints)
		}
	}
	if _, present := f.Value(keyTokenType); present {
		types, isInt := f.Int32s(keyTokenType)
		if !isInt {
			return vocabErr(keyTokenType, "not an array of int32")
		}
		c.Types = convert[TokenType](types)
	}
	c.Name, _ = f.String(keyName)
	c.ChatTemplate, _ = f.String(keyChatTemplate)
	if c.ChatTemplate == "" {
		arch, _ := f.String("general.architecture")
		c.ChatTemplate, c.BuiltinChatTemplate = BuiltinChatTemplate(arch)
	}
	return nil
}

// convert returns xs converted element by element.
func convert[To ~float32 | ~int32](xs []int32) []To {
	out := make([]To, len(xs))
	for i, x := range xs {
		out[i] = To(x)
	}
	return out
}

// readSpecialIDs overrides the default special ids with the file's. An id of -1 or
// 0xFFFFFFFF (as converters write for "none") clears it.
func readSpecialIDs(f *gguf.File, c *Config) error {
	for _, s := range []struct {
		key string
		dst *int32
	}{{keyBOS, &c.BOS}, {keyEOS, &c.EOS}, {keyUNK, &c.UNK}, {keyPAD, &c.PAD}, {keyEOT, &c.EOT}, {keyEOM, &c.EOM}, {keySEP, &c.SEP}} {
		if _, present := f.Value(s.key); !present {
			continue
		}
		v, ok := f.Int(s.key)
		if !ok {
			return vocabErr(s.key, "not an integer")
		}
		switch {
		case v == -1 || v == math.MaxUint32:
			*s.dst = NoToken
		case v < 0 || v >= int64(len(c.Tokens)):
			return vocabErr(s.key, "id %d out of range [0, %d)", v, len(c.Tokens))
		default:
			*s.dst = int32(v)
		}
	}
	return nil
}

// readNormalizer reads WordPiece's normaliser switches: lower-casing (default on) and
// accent stripping (default: as lower-casing), as llama.cpp does.
func readNormalizer(f *gguf.File, c *Config) error {
	lower, strip := true, true
	if _, present := f.Value(keyLowercase); present {
		v, ok := f.Bool(keyLowercase)
		if !ok {
			return vocabErr(keyLowercase, "not a bool")
		}
		lower, strip = v, v
	}
	if _, present := f.Value(keyStripAccents); present {
		v, ok := f.Bool(keyStripAccents)
		if !ok {
			return vocabErr(keyStripAccents, "not a bool")
		}
		strip = v
	}
	c.KeepCase, c.KeepAccents = !lower, !strip
	return nil
}

// readFlags reads the boolean switches.
func readFlags(f *gguf.File, c *Config) error {
	for _, s := range []struct {
		key string
		dst *bool
	}{{keyAddBOS, &c.AddBOS}, {keyAddEOS, &c.AddEOS}, {keySpacePrefix, &c.AddSpacePrefix}} {
		if _, present := f.Value(s.key); !present {
			continue
		}
		v, ok := f.Bool(s.key)
		if !ok {
			return vocabErr(s.key, "not a bool")
		}
		*s.dst = v
	}
	return nil
}

func missingOrTyped(f *gguf.File, key, want string) error {
	if _, present := f.Value(key); !present {
		return vocabErr(key, "missing")
	}
	return vocabErr(key, "not %s", want)
}
