// Package bench is the client side of `pagoda bench serve`, modelled on
// `vllm bench serve`: it sends a dataset of prompts to any OpenAI-compatible
// server (pagoda, vLLM, llama.cpp's server, Ollama) at a Poisson request
// rate under a concurrency limit, streams every response, and reports
// throughput and the distributions of time to first token (TTFT), time per
// output token (TPOT), inter-token latency (ITL) and end-to-end latency.
package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// Prompt is one request of a benchmark.
type Prompt struct {
	Text string
	// InputLen is the prompt's length in tokens as the dataset estimates it;
	// the report uses the server's count (usage.prompt_tokens) when it
	// gives one.
	InputLen int
	// OutputLen is the max_tokens asked for (with --ignore-eos, exactly the
	// tokens generated).
	OutputLen int
}

// words are common English words, each a single token (with its leading
// space) in the usual BPE and SentencePiece vocabularies (GPT-2 style,
// Llama, SmolLM2, Qwen2, Mistral). A random prompt of n of them tokenizes
// to about n tokens on any server, without needing its tokenizer.
var words = strings.Fields(`the of and to in is was for that with as on by at from his her
he she it they we you this be are were had has have not but or an which one all their there
been when who will more no if out so what up about into than them can only other new some
time could these two may then first any like now my over such our man me even most made after
also did many before must through back years where much your way well down should because each
just those people how too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us great old year
off come since against go came right used take three house use during without again place
around however home small thought went say part once general high upon school every
does left number course war until always away something fact though water less public put
think almost hand enough far took head yet government system better set told nothing night end
why called find going look asked later knew point next city give group days young let room
side case open given felt mind power large children early certain white found money
order area best often hard light five face sure already door hour road book began black
study river story free town sea dog cat tree bird girl boy king friend food voice
music table garden morning window summer winter`)

// RandomPrompts returns n prompts of random words, like vLLM's random
// dataset: input and output lengths drawn uniformly from
// [len·(1−ratio), len·(1+ratio)], everything fixed by seed.
func RandomPrompts(n, inputLen, outputLen int, rangeRatio float64, seed uint64) ([]Prompt, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("--num-prompts must be ≥ 1, got %d", n)
	case inputLen < 1 || outputLen < 1:
		return nil, fmt.Errorf("--random-input-len and --random-output-len must be ≥ 1, got %d and %d", inputLen, outputLen)
	case rangeRatio < 0 || rangeRatio >= 1:
		return nil, fmt.Errorf("--random-range-ratio must be in [0, 1), got %v", rangeRatio)
	}
	r := rand.New(rand.NewPCG(seed, 0x62656e6368)) // "bench"
	out := make([]Prompt, n)
	for i := range out {
		in, gen := drawLen(r, inputLen, rangeRatio), drawLen(r, outputLen, rangeRatio)
		ws := make([]string, in)
		for j := range ws {
			ws[j] = words[r.IntN(len(words))]
		}
		out[i] = Prompt{Text: strings.Join(ws, " "), InputLen: in, OutputLen: gen}
	}
	return out, nil
}

// drawLen draws uniformly from [ceil(l·(1−ratio)), floor(l·(1+ratio))], at least 1.
func drawLen(r *rand.Rand, l int, ratio float64) int {
	lo := max(1, int(math.Ceil(float64(l)*(1-ratio))))
	hi := max(lo, int(math.Floor(float64(l)*(1+ratio))))
	return lo + r.IntN(hi-lo+1)
}

// ReadJSONL reads up to n prompts from a JSONL file, one object per line:
// {"prompt": "...", "output_len": 128}. "output_len" (or "max_tokens") is
// optional and defaults to outputLen. Blank lines are skipped. Fewer than n
// prompts are cycled to reach n.
func ReadJSONL(path string, n, outputLen int) ([]Prompt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--dataset-path: %w", err)
	}
	defer f.Close()
	var out []Prompt
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan() && len(out) < n; line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var rec struct {
			Prompt    string `json:"prompt"`
			OutputLen *int   `json:"output_len"`
			MaxTokens *int   `json:"max_tokens"`
		}
		if err := json.Unmarshal([]byte(b), &rec); err != nil || rec.Prompt == "" {
			return nil, fmt.Errorf("%s line %d: want {\"prompt\": \"...\", \"output_len\": N}", path, line)
		}
		p := Prompt{Text: rec.Prompt, InputLen: len(strings.Fields(rec.Prompt)), OutputLen: outputLen}
		for _, v := range []*int{rec.MaxTokens, rec.OutputLen} {
			if v != nil {
				p.OutputLen = *v
			}
		}
		if p.OutputLen < 1 {
			return nil, fmt.Errorf("%s line %d: output_len must be ≥ 1, got %d", path, line, p.OutputLen)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no prompts")
	}
	for i := 0; len(out) < n; i++ {
		out = append(out, out[i])
	}
	return out, nil
}
