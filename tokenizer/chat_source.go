package tokenizer

import (
	"sort"
	"strings"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// jinja2Source rewrites a template's source, before gonja parses it, where gonja's grammar or
// lexer differs from jinja2's, into source that gonja reads the way jinja2 reads the original:
//
//   - Conditional expressions. gonja accepts "X if C else Y" only as a whole {{ }} or {% set %}
//     expression, not inside parentheses, brackets, call arguments or chained ("a if b else c if
//     d else e"). Every one is rewritten as (((C) and [X] or [Y])[0]): gonja's and/or return an
//     operand and evaluate lazily, like Python's, so only the chosen branch is evaluated, and the
//     one-element list keeps a falsy X. A missing else gives none, which renders as jinja2's
//     undefined does ("").
//   - lstrip_blocks. jinja2 strips the spaces and tabs before {% or {# only when they start a
//     line; gonja strips them after any tag too ("{{ x }} {% endif %}" keeps its space in jinja2).
//     Such a tag gets a "+", which keeps them in gonja as well.
//
// The source is lexed with gonja's own lexer, so strings, comments and raw blocks are never
// touched. A source gonja cannot lex is returned unchanged, for gonja to report.
func jinja2Source(src string, cfg *config.Config) string {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n") // as gonja's lexer
	lexCfg := cfg.Inherit()
	lexCfg.KeepTrailingNewline = true // token positions then index src itself
	var ts []*tokens.Token
	for st := tokens.LexAll(src, lexCfg); !st.End(); st.Next() {
		ts = append(ts, st.Current())
	}
	if len(ts) == 0 || ts[len(ts)-1].Type == tokens.Error {
		return src
	}
	r := condRewriter{src: src, ts: ts}
	var edits []sourceEdit
	for k := 0; k < len(ts); k++ {
		switch ts[k].Type {
		case tokens.BlockBegin, tokens.CommentBegin:
			if e, ok := keepLeadingSpace(src, ts[k], cfg); ok {
				edits = append(edits, e)
			}
		}
		end := regionEnd(ts, k)
		if end < 0 {
			continue
		}
		var text string
		if ts[k].Type == tokens.VariableBegin {
			text = r.element(k+1, end)
		} else if assign := setAssign(ts, k+1, end); assign > 0 {
			text = r.seq(k+1, assign+1) + r.element(assign+1, end)
		} else {
			text = r.seq(k+1, end)
		}
		from, to := ts[k+1].Pos, ts[end].Pos
		if k+1 < end && text != src[from:to] {
			edits = append(edits, sourceEdit{from, to, text})
		}
		k = end
	}
	return applyEdits(src, edits)
}

type sourceEdit struct {
	from, to int // src[from:to] is replaced
	text     string
}

func applyEdits(src string, edits []sourceEdit) string {
	if len(edits) == 0 {
		return src
	}
	// Stable: an insertion ("+" after "{%") stays before the replacement that starts there.
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].from < edits[j].from })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(src[last:e.from])
		b.WriteString(e.text)
		last = e.to
	}
	b.WriteString(src[last:])
	return b.String()
}

// keepLeadingSpace returns the edit that adds "+" to the block or comment tag tok when lstrip_blocks
// would remove the spaces before it in gonja but not in jinja2: they do not start a line.
func keepLeadingSpace(src string, tok *tokens.Token, cfg *config.Config) (sourceEdit, bool) {
	if !cfg.LeftStripBlocks || (tok.Val != cfg.BlockStartString && tok.Val != cfg.CommentStartString) {
		return sourceEdit{}, false // no lstrip, or the tag has its own whitespace control
	}
	q := tok.Pos
	for q > 0 && (src[q-1] == ' ' || src[q-1] == '\t') {
		q--
	}
	if q == tok.Pos || q == 0 || src[q-1] == '\n' {
		return sourceEdit{}, false // nothing to strip, or a line start: both strip
	}
	if q >= 3 && src[q-1] == '}' && src[q-3] == '-' {
		return sourceEdit{}, false // after "-}}" or "-%}", which strip the spaces in both
	}
	at := tok.Pos + len(tok.Val)
	return sourceEdit{at, at, "+"}, true
}

// regionEnd returns the index of the token closing the expression or statement opened at ts[k],
// or -1 when ts[k] opens none.
func regionEnd(ts []*tokens.Token, k int) int {
	var closer tokens.Type
	switch ts[k].Type {
	case tokens.VariableBegin:
		closer = tokens.VariableEnd
	case tokens.BlockBegin:
		closer = tokens.BlockEnd
	default:
		return -1
	}
	for j := k + 1; j < len(ts); j++ {
		if ts[j].Type == closer {
			return j
		}
	}
	return -1
}

// setAssign returns the index of the "=" of a {% set target = value %} statement in ts[i:j], or -1.
func setAssign(ts []*tokens.Token, i, j int) int {
	if i >= j || ts[i].Type != tokens.Name || ts[i].Val != "set" {
		return -1
	}
	for k := i + 1; k < j; k++ {
		switch ts[k].Type {
		case tokens.Assign:
			return k
		case tokens.Name, tokens.Dot, tokens.Comma:
		default:
			return -1
		}
	}
	return -1
}

// condRewriter rewrites conditional expressions within a token sequence; the text of ts[i:j]
// is src[ts[i].Pos:ts[j].Pos], so it keeps the original spacing.
type condRewriter struct {
	src string
	ts  []*tokens.Token
}

func (r condRewriter) text(i, j int) string { return r.src[r.ts[i].Pos:r.ts[j].Pos] }

func opens(t *tokens.Token) bool {
	return t.Type == tokens.LeftParenthesis || t.Type == tokens.LeftBracket || t.Type == tokens.LeftBrace
}

func closes(t *tokens.Token) bool {
	return t.Type == tokens.RightParenthesis || t.Type == tokens.RightBracket || t.Type == tokens.RightBrace
}

// matching returns the index of the bracket closing the one at ts[k], before j, or -1.
func (r condRewriter) matching(k, j int) int {
	depth := 0
	for m := k; m < j; m++ {
		switch {
		case opens(r.ts[m]):
			depth++
		case closes(r.ts[m]):
			depth--
			if depth == 0 {
				return m
			}
		}
	}
	return -1
}

// topLevel returns the index of the first token in ts[i:j] outside any bracket that is the
// keyword name, or -1.
func (r condRewriter) topLevel(i, j int, name string) int {
	for k := i; k < j; k++ {
		t := r.ts[k]
		if opens(t) {
			if m := r.matching(k, j); m > 0 {
				k = m
				continue
			}
			return -1
		}
		if t.Type == tokens.Name && t.Val == name {
			return k
		}
	}
	return -1
}

// seq returns ts[i:j] with the conditionals inside its brackets rewritten.
func (r condRewriter) seq(i, j int) string {
	var b strings.Builder
	last := i
	for k := i; k < j; k++ {
		if !opens(r.ts[k]) {
			continue
		}
		m := r.matching(k, j)
		if m < 0 {
			break // unbalanced: left for gonja to report
		}
		b.WriteString(r.text(last, k+1))
		b.WriteString(r.group(k+1, m))
		last, k = m, m-1
	}
	b.WriteString(r.text(last, j))
	return b.String()
}

// group rewrites the contents of a bracket: elements separated by commas or colons, each
// possibly a keyword argument (name=value).
func (r condRewriter) group(i, j int) string {
	var b strings.Builder
	start := i
	for k := i; k <= j; k++ {
		if k < j && opens(r.ts[k]) {
			if m := r.matching(k, j); m > 0 {
				k = m
			}
			continue
		}
		if k < j && r.ts[k].Type != tokens.Comma && r.ts[k].Type != tokens.Colon {
			continue
		}
		s := start
		if s+1 < k && r.ts[s].Type == tokens.Name && r.ts[s+1].Type == tokens.Assign {
			b.WriteString(r.text(s, s+2))
			s += 2
		}
		b.WriteString(r.element(s, k))
		if k < j {
			b.WriteString(r.text(k, k+1))
		}
		start = k + 1
	}
	return b.String()
}

// element rewrites one expression, itself a conditional expression or not.
func (r condRewriter) element(i, j int) string {
	if i >= j {
		return ""
	}
	ifAt := r.topLevel(i, j, "if")
	if ifAt <= i || ifAt+1 >= j {
		return r.seq(i, j) // no conditional, or no value or condition: left for gonja
	}
	alt, condEnd := "none", j
	if elseAt := r.topLevel(ifAt+1, j, "else"); elseAt >= 0 {
		if elseAt == ifAt+1 || elseAt+1 >= j {
			return r.seq(i, j)
		}
		alt, condEnd = r.element(elseAt+1, j), elseAt
	}
	return "(((" + r.seq(ifAt+1, condEnd) + ") and [" + r.seq(i, ifAt) + "] or [" + alt + "])[0])"
}
