package tokenizer

import "strings"

// buildPieces precomputes the bytes each token decodes to (llama.cpp's token_to_piece with
// special tokens rendered): control, unknown and user-defined tokens are their text; byte
// tokens their byte; normal SPM tokens have ▁ turned back into spaces; normal byte-level BPE
// tokens are mapped back from GPT-2 characters to bytes; unused and undefined tokens decode
// to nothing.
func (t *Tokenizer) buildPieces() {
	t.pieces = make([]string, len(t.tokens))
	for id, text := range t.tokens {
		switch t.types[id] {
		case TypeControl, TypeUnknown, TypeUserDefined:
			t.pieces[id] = text
		case TypeByte:
			if b, ok := parseByteToken(text); ok {
				t.pieces[id] = string([]byte{b})
			} else {
				t.pieces[id] = text
			}
		case TypeNormal:
			if t.model == ModelSPM || t.model == ModelWPM {
				t.pieces[id] = strings.ReplaceAll(text, "\u2581", " ")
			} else {
				t.pieces[id] = string(byteDecode(nil, text))
			}
		}
	}
}

// parseByteToken parses "<0xNN>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(s[3])
	lo, ok2 := hexDigit(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Piece is the text id decodes to on its own, special tokens rendered as their text. It may be
// part of a UTF-8 character (byte tokens, byte-level BPE). Invalid ids give "".
func (t *Tokenizer) Piece(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.pieces[id]
}

// Decode concatenates the pieces of ids, rendering special tokens as their text. For
// SentencePiece vocabularies with add_space_prefix, one leading space is dropped from the
// first token (the space Encode added). The result holds the exact bytes, which need not be
// valid UTF-8; Detokenizer gives valid text incrementally.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.decode(ids, false)
}

// DecodeSkipSpecial is Decode without control and unknown tokens; the leading space is then
// dropped from the first token that is kept.
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	return t.decode(ids, true)
}

func (t *Tokenizer) decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	first := true
	for _, id := range ids {
		if skipSpecial && t.IsSpecial(id) {
			continue
		}
		p := t.Piece(id)
		if first {
			p = t.stripLeadingSpace(p)
			first = false
		}
		b.WriteString(p)
	}
	return b.String()
}

// stripLeadingSpace drops the space SPM's add_space_prefix put before the first word.
func (t *Tokenizer) stripLeadingSpace(piece string) string {
	if t.model == ModelSPM && t.addSpacePrefix && strings.HasPrefix(piece, " ") {
		return piece[1:]
	}
	return piece
}
