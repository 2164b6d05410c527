package synth

import (
	_ "embed"
	"fmt"

	"pagoda/gguf"
)

// Qwen3's tokenizer. llama.cpp ships no vocabulary file of Qwen3; its
// ggml-vocab-qwen2.gguf has the same byte-level BPE (the same 151643
// tokens and 151387 merges) but only three of the added tokens. A qwen3
// model built on it gets the tokenizer llama.cpp's converter writes for a
// real Qwen3 GGUF (TextModel._set_vocab_gpt2 and gguf.SpecialVocab on
// Qwen/Qwen3-0.6B): the BPE tokens, the added tokens of
// tokenizer_config.json's added_tokens_decoder at their ids, typed as the
// converter types them (CONTROL when "special" or when the text looks like
// <|…|>, else USER_DEFINED), "[PADi]" tokens typed UNUSED up to the
// vocabulary size, the merges, EOS <|im_end|> and padding <|endoftext|>
// (tokenizer_config.json), BOS <|endoftext|> (config.json's bos_token_id)
// with add_bos_token false, and the chat template.
//
//	      0 … 151642   BPE tokens (NORMAL), from the vocabulary file
//	151643 … 151668   added tokens (qwen3AddedTokens)
//	151669 … n-1      [PADi] (UNUSED); n = 151936 for every Qwen3 size

// qwen3ChatTemplate is Qwen3's chat template (templates/README.md).
//
//go:embed templates/qwen3.jinja
var qwen3ChatTemplate string

// llama.cpp's token types (tokenizer.ggml.token_type).
const (
	tokenControl     = 3
	tokenUserDefined = 4
)

// qwen3FirstAdded is the id of Qwen3's first added token, <|endoftext|>:
// the size of the BPE vocabulary.
const qwen3FirstAdded = 151643

// qwen3AddedTokens are Qwen3's added tokens from qwen3FirstAdded on.
// The tool-call, tool-response and think markers are not special, so
// the converter types them USER_DEFINED; the FIM and repository tokens
// are not special either but look special (<|…|>): CONTROL.
var qwen3AddedTokens = []struct {
	text string
	typ  int32
}{
	{"<|endoftext|>", tokenControl}, // 151643
	{"<|im_start|>", tokenControl},
	{"<|im_end|>", tokenControl}, // 151645
	{"<|object_ref_start|>", tokenControl},
	{"<|object_ref_end|>", tokenControl},
	{"<|box_start|>", tokenControl},
	{"<|box_end|>", tokenControl},
	{"<|quad_start|>", tokenControl}, // 151650
	{"<|quad_end|>", tokenControl},
	{"<|vision_start|>", tokenControl},
	{"<|vision_end|>", tokenControl},
	{"<|vision_pad|>", tokenControl},
	{"<|image_pad|>", tokenControl}, // 151655
	{"<|video_pad|>", tokenControl},
	{"<tool_call>", tokenUserDefined},
	{"</tool_call>", tokenUserDefined},
	{"<|fim_prefix|>", tokenControl},
	{"<|fim_middle|>", tokenControl}, // 151660
	{"<|fim_suffix|>", tokenControl},
	{"<|fim_pad|>", tokenControl},
	{"<|repo_name|>", tokenControl},
	{"<|file_sep|>", tokenControl},
	{"<tool_response>", tokenUserDefined}, // 151665
	{"</tool_response>", tokenUserDefined},
	{"<think>", tokenUserDefined},
	{"</think>", tokenUserDefined}, // 151668
}

// Qwen3's special token ids.
const (
	qwen3EOS = 151645 // <|im_end|>
	qwen3PAD = 151643 // <|endoftext|>
	qwen3BOS = 151643 // <|endoftext|>, never added
)

// isQwen2BPE reports whether v holds Qwen2's byte-level BPE vocabulary:
// a gpt2 tokenizer with the qwen2 pre-tokenizer, merges, and
// <|endoftext|> right after the BPE tokens.
func isQwen2BPE(v *gguf.File) bool {
	model, _ := v.String("tokenizer.ggml.model")
	pre, _ := v.String("tokenizer.ggml.pre")
	toks, _ := v.Strings("tokenizer.ggml.tokens")
	_, merges := v.Strings("tokenizer.ggml.merges")
	return model == "gpt2" && pre == "qwen2" && merges && len(toks) > qwen3FirstAdded && toks[qwen3FirstAdded] == "<|endoftext|>"
}

// addQwen3Tokenizer writes Qwen3's tokenizer of n tokens, built on the
// Qwen2 BPE vocabulary v, with the converter's keys in its order.
func addQwen3Tokenizer(w *gguf.Writer, v *gguf.File, n int) error {
	base, _ := v.Strings("tokenizer.ggml.tokens")
	types, ok := v.Int32s("tokenizer.ggml.token_type")
	if !ok || len(types) != len(base) {
		return fmt.Errorf("synth: the Qwen2 vocabulary has %d token types for %d tokens", len(types), len(base))
	}
	if n < qwen3FirstAdded+len(qwen3AddedTokens) {
		return fmt.Errorf("synth: Qwen3's tokenizer needs a vocabulary of at least %d tokens, not %d", qwen3FirstAdded+len(qwen3AddedTokens), n)
	}
	toks := append(make([]string, 0, n), base[:qwen3FirstAdded]...)
	typs := append(make([]int32, 0, n), types[:qwen3FirstAdded]...)
	for _, a := range qwen3AddedTokens {
		toks, typs = append(toks, a.text), append(typs, a.typ)
	}
	for i := len(toks); i < n; i++ {
		toks, typs = append(toks, fmt.Sprintf("[PAD%d]", i)), append(typs, tokenUnused)
	}
	merges, _ := v.Strings("tokenizer.ggml.merges")
	w.AddKV("tokenizer.ggml.model", "gpt2")
	w.AddKV("tokenizer.ggml.pre", "qwen2")
	w.AddKV("tokenizer.ggml.tokens", toks)
	w.AddKV("tokenizer.ggml.token_type", typs)
	w.AddKV("tokenizer.ggml.merges", merges)
	w.AddKV("tokenizer.ggml.eos_token_id", uint32(qwen3EOS))
	w.AddKV("tokenizer.ggml.padding_token_id", uint32(qwen3PAD))
	w.AddKV("tokenizer.ggml.bos_token_id", uint32(qwen3BOS))
	w.AddKV("tokenizer.ggml.add_bos_token", false)
	w.AddKV("tokenizer.chat_template", qwen3ChatTemplate)
	return nil
}
