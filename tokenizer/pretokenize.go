package tokenizer

import "regexp"

// A BPE pre-tokenizer is a pipeline of splitters, as in llama.cpp's unicode_regex_split: each
// splitter cuts every chunk the previous one produced into pieces (its matches and the gaps
// between them), and BPE merges never cross a piece boundary.
//
// Why no general regex engine: the GPT-2, Llama-3, Qwen2 and GPT-4o patterns need the lookahead
// \s+(?!\S), which Go's RE2-based regexp lacks. Rather than depend on a backtracking engine
// (dlclark/regexp2) and reproduce llama.cpp's Unicode handling through it, those three
// patterns are hand-coded scanners (pretokenize_scan.go, pretokenize_gpt4o.go) that mirror llama.cpp's own
// hand-written splitters, categories included; that is also linear-time. The remaining
// patterns have no lookaround and run on Go's regexp with \s spelled out as llama.cpp's
// whitespace set.
type splitter interface {
	// split appends to ends the end indices (in codepoints) of the pieces of t.cps[lo:hi].
	split(t *decodedText, lo, hi int, ends []int) []int
}

// wsClass is \s as llama.cpp's regex path sees it: ASCII whitespace plus Unicode White_Space.
const wsClass = `[\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]`

// deepseekLetters is DeepSeek-LLM's explicit letter class (from its tokenizer.json), escaped
// because several of its codepoints have canonical equivalents that editors normalise.
const deepseekLetters = `[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]`

// cjk is DeepSeek's CJK run class.
const cjk = `[\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+`

// preTokenizers maps tokenizer.ggml.pre values to pipelines, grouped as llama.cpp groups them.
var preTokenizers = func() map[string]func() []splitter {
	gpt2 := func() []splitter { return []splitter{gpt2Scanner{}} }
	digitsThenGPT2 := func() []splitter { return []splitter{re(`\pN`), gpt2Scanner{}} }
	llama3 := func() []splitter { return []splitter{llama3Scanner{digitRun: 3}} }
	qwen2 := func() []splitter { return []splitter{llama3Scanner{digitRun: 1}} }
	bloom := func() []splitter { return []splitter{llama3Scanner{digitRun: 0}} }
	gpt4o := func() []splitter { return []splitter{gpt4oScanner{}} }
	m := map[string]func() []splitter{
		"default": func() []splitter {
			return []splitter{re(`[\pP$+<=>^~|]+`), gpt2Scanner{}, re(`\pN+`), re(`[0-9][0-9][0-9]`)}
		},
		"falcon": func() []splitter {
			return []splitter{re("[\\pP$+<=>^~|`]+"), gpt2Scanner{}, re(`[0-9][0-9][0-9]`)}
		},
		"deepseek-llm": func() []splitter {
			return []splitter{re(`[\r\n]`), re(wsClass + `?` + deepseekLetters + `+`),
				re(wsClass + `?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+`), re(wsClass + `+$`), re(cjk), re(`\pN+`)}
		},
		"deepseek-coder": func() []splitter {
			return []splitter{re(`[\r\n]`), re(wsClass + `?\pL+`), re(wsClass + `?\pP+`), re(cjk), re(`\pN`)}
		},
	}
	for _, names := range []struct {
		pipeline func() []splitter
		names    []string
	}{
		{gpt2, []string{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4",
			"jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "jina-v1-en", "jina-v2-code", "roberta-bpe",
			"gigachat", "a.x-4.0", "mellum", "modern-bert"}},
		{digitsThenGPT2, []string{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
			"minerva-7b", "mellum2"}},
		{llama3, []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
			"lfm2", "jina-v5-nano", "dbrx", "smaug-bpe"}},
		{qwen2, []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan",
			"solar-open"}},
		{bloom, []string{"poro-chat", "bloom", "gpt3-finnish"}},
		{gpt4o, []string{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}},
	} {
		for _, n := range names.names {
			m[n] = names.pipeline
		}
	}
	return m
}()

// llama3Family are the pre-tokenizers for which llama.cpp adds BOS by default and keeps a
// pre-token that is itself a token whole (ignore_merges).
var llama3Family = map[string]bool{
	"llama3": true, "llama-v3": true, "llama-bpe": true, "falcon3": true, "falcon-h1": true,
	"pixtral": true, "midm-2.0": true, "lfm2": true, "jina-v5-nano": true,
}

// preTokenizer returns the pipeline for a tokenizer.ggml.pre value.
func preTokenizer(name string) ([]splitter, bool, error) {
	mk, ok := preTokenizers[name]
	if !ok {
		return nil, false, vocabErr(keyPre, "unsupported pre-tokenizer %q", name)
	}
	return mk(), llama3Family[name], nil
}

func re(expr string) splitter { return regexSplitter{regexp.MustCompile(expr)} }

// regexSplitter isolates every leftmost-first match of a lookaround-free pattern.
type regexSplitter struct{ re *regexp.Regexp }

func (r regexSplitter) split(t *decodedText, lo, hi int, ends []int) []int {
	base := t.offs[lo]
	prev := lo
	for _, m := range r.re.FindAllStringIndex(t.s[base:t.offs[hi]], -1) {
		a, b := t.cpIndex(base+m[0]), t.cpIndex(base+m[1])
		if a > prev {
			ends = append(ends, a)
		}
		if b > a {
			ends = append(ends, b)
		}
		prev = b
	}
	if hi > prev {
		ends = append(ends, hi)
	}
	return ends
}

// preTokenize splits t into pieces with the pipeline and returns their codepoint end indices.
func preTokenize(t *decodedText, pipeline []splitter) []int {
	n := len(t.cps)
	if n == 0 {
		return nil
	}
	ends := []int{n}
	var next []int
	for _, s := range pipeline {
		next = next[:0]
		lo := 0
		for _, hi := range ends {
			next = s.split(t, lo, hi, next)
			lo = hi
		}
		ends, next = next, ends
	}
	return ends
}
