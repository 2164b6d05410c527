package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"pagoda/model"
	"pagoda/model/llama"
	"pagoda/tokenizer"
)

// kldFlags are the flags of `pagoda bench kld`.
type kldFlags struct {
	model   string
	text    string
	tokens  int
	ctx     int
	threads int
	noFloor bool
	ref     string // "exact", "dense" or "fast"
	kv      string // the variants' KV cache types, comma-separated
}

// runBenchKLD implements `pagoda bench kld`: the fidelity of the fast
// arithmetic against the exact one, as llama-perplexity --kl-divergence
// measures a quantized model against its base: the text is cut into
// windows of --ctx tokens, each scored teacher-forced from an empty cache
// by both arithmetics, and every position's KL divergence KL(exact ‖ fast)
// of the next-token distributions and top-1 agreement are reported. The
// same figures for the exact arithmetic with flash attention (llama.cpp's
// other attention path, reproduced as exactly) give the noise floor: how
// far a mere change of rounding moves this model's outputs. With
// --reference dense the reference is the model's math itself (llama.Dense:
// float64 over the dequantized weights, unquantized activations) and the
// exact arithmetic is scored beside the fast one: how far each arithmetic
// is from what it approximates. With --reference fast the reference is the
// fast arithmetic on an F16 KV cache and the variants are the fast
// arithmetic on each --kv-cache-dtype cache: the fidelity of a KV cache
// type (q8_0: its quantization) alone.
func runBenchKLD(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench kld", stdout)
	var f kldFlags
	fs.StringVar(&f.model, "model", defaultModelRef, modelFlagHelp)
	fs.StringVar(&f.text, "text", "", "UTF-8 text file to score (required; e.g. the repository's README.md)")
	fs.IntVar(&f.tokens, "tokens", 4096, "positions to score (the text must hold them)")
	fs.IntVar(&f.ctx, "ctx", 512, "tokens per window")
	fs.IntVar(&f.threads, "threads", 0, threadsFlagHelp)
	fs.BoolVar(&f.noFloor, "no-floor", false, "skip the noise floor: the exact arithmetic with flash attention, another exact reproduction of llama.cpp that only rounds differently")
	fs.StringVar(&f.ref, "reference", "exact", "what the arithmetics are scored against: exact (llama.cpp's arithmetic, reproduced), dense (float64 over the dequantized weights and unquantized activations, the model's own math; minutes per 512 tokens, plain RoPE only) or fast (the fast arithmetic on an f16 KV cache, to score --kv-cache-dtype alone)")
	fs.StringVar(&f.kv, "kv-cache-dtype", "f16", "KV cache types of the fast arithmetic scored, comma-separated (f32, f16, bf16, q8_0); the references keep an f16 cache")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.text == "" {
		return usageError{errors.New("--text is required")}
	}
	if f.tokens < 1 || f.ctx < 2 {
		return usageError{errors.New("--tokens must be ≥ 1 and --ctx ≥ 2")}
	}
	if f.ref != "exact" && f.ref != "dense" && f.ref != "fast" {
		return usageError{fmt.Errorf("--reference %q: want exact, dense or fast", f.ref)}
	}
	var kvs []model.KVType
	for _, name := range strings.Split(f.kv, ",") {
		t, err := model.ParseKVType(name)
		if err != nil {
			return usageError{fmt.Errorf("--kv-cache-dtype: %w", err)}
		}
		kvs = append(kvs, t)
	}
	var err error
	if f.model, err = resolveModel(f.model, stderr); err != nil {
		return err
	}
	text, err := os.ReadFile(f.text)
	if err != nil {
		return fmt.Errorf("--text: %w", err)
	}
	var variants []kldVariant
	for _, t := range kvs {
		name := "fast arithmetic"
		if len(kvs) > 1 || t != model.KVF16 || f.ref == "fast" {
			name += ", " + t.String() + " cache"
		}
		variants = append(variants, kldVariant{name, loadOpts(false, f.threads), t})
	}
	if f.ref == "dense" {
		variants = append(variants, kldVariant{"exact arithmetic", model.LoadOptions{Threads: f.threads, ExactArithmetic: true}, model.KVF16})
	}
	if !f.noFloor && f.ref != "fast" {
		variants = append(variants, kldVariant{"exact, flash attention (floor)", loadOpts(true, f.threads), model.KVF16})
	}
	sts, err := benchKLD(f, string(text), variants)
	if err != nil {
		return err
	}
	against := "the exact arithmetic"
	switch f.ref {
	case "dense":
		against = "the dense float64 reference"
	case "fast":
		against = "the fast arithmetic on an f16 KV cache"
	}
	fmt.Fprintf(stdout, "model %s, %d positions in windows of %d tokens, against %s\n", f.model, f.tokens, f.ctx, against)
	for i, st := range sts {
		fmt.Fprintf(stdout, "%-32s mean KL %.3g  p99 %.3g  max %.3g  top-1 agreement %.2f%% (%d differ; largest exact margin among them %.3g)\n",
			variants[i].name, st.mean, st.p99, st.max, 100*float64(st.n-st.differ)/float64(st.n), st.differ, st.maxMargin)
	}
	return nil
}

// kldVariant is one way of loading the model compared with the exact
// arithmetic.
type kldVariant struct {
	name string
	opts model.LoadOptions
	kv   model.KVType // its KV cache's type
}

// loadOpts returns the fast arithmetic's options, or with floor the exact
// arithmetic with flash attention.
func loadOpts(floor bool, threads int) model.LoadOptions {
	return model.LoadOptions{Threads: threads, ExactArithmetic: floor, FlashAttention: floor}
}

// kldStats summarises the positions scored.
type kldStats struct {
	n, differ      int
	mean, p99, max float64
	maxMargin      float64 // log-probability margin of the exact top-1 where the two differ
	kls            []float64
}

// add scores one position.
func (st *kldStats) add(a, b []float32) {
	kl, same, margin := compareLogits(a, b)
	st.kls = append(st.kls, kl)
	if !same {
		st.differ++
		st.maxMargin = max(st.maxMargin, margin)
	}
}

// finish computes the summary once every position is added.
func (st *kldStats) finish() {
	st.n = len(st.kls)
	for _, k := range st.kls {
		st.mean += k / float64(st.n)
	}
	sort.Float64s(st.kls)
	st.p99, st.max = st.kls[(st.n-1)*99/100], st.kls[st.n-1]
}

// benchKLD loads the reference (f.ref) and every variant and scores the
// text's first f.tokens positions.
func benchKLD(f kldFlags, text string, variants []kldVariant) ([]kldStats, error) {
	refOpts := model.LoadOptions{Threads: f.threads, ExactArithmetic: true}
	if f.ref == "fast" {
		refOpts = loadOpts(false, f.threads)
	}
	exact, file, err := model.Load(f.model, refOpts)
	if err != nil {
		return nil, err
	}
	defer exact.Close()
	reference := func(win []int32) ([]float32, error) { return windowLogits(exact, win, model.KVF16) }
	if f.ref == "dense" {
		d, err := llama.NewDense(file, exact.Config())
		if err != nil {
			return nil, err
		}
		reference = func(win []int32) ([]float32, error) { return denseLogits(d, win), nil }
	}
	tok, err := tokenizer.FromGGUF(file)
	if err != nil {
		return nil, err
	}
	ms := make([]model.Model, len(variants))
	for i, v := range variants {
		if ms[i], _, err = model.Load(f.model, v.opts); err != nil {
			return nil, err
		}
		defer ms[i].Close()
	}
	ids := tok.Encode(text, false, false)
	need := (f.tokens + f.ctx - 2) / (f.ctx - 1) * f.ctx // f.ctx−1 positions per window
	if len(ids) < need {
		return nil, fmt.Errorf("--text: %d tokens, %d needed for %d positions in windows of %d", len(ids), need, f.tokens, f.ctx)
	}
	sts := make([]kldStats, len(variants))
	v := exact.Config().VocabSize
	for w, done := 0, 0; done < f.tokens; w++ {
		win := ids[w*f.ctx : (w+1)*f.ctx]
		le, err := reference(win)
		if err != nil {
			return nil, err
		}
		np := min(len(win)-1, f.tokens-done)
		for i, m := range ms {
			lb, err := windowLogits(m, win, variants[i].kv)
			if err != nil {
				return nil, err
			}
			for p := range np {
				sts[i].add(le[p*v:(p+1)*v], lb[p*v:(p+1)*v])
			}
		}
		done += np
	}
	for i := range sts {
		sts[i].finish()
	}
	return sts, nil
}

// windowLogits runs tokens as one sequence from an empty cache and returns
// the logits of every position, on a KV cache of type t.
func windowLogits(m model.Model, tokens []int32, t model.KVType) ([]float32, error) {
	const blockSize = 16
	n := int32(len(tokens))
	kv, err := m.NewKVCache(int(n+blockSize-1)/blockSize*m.Config().KVLayout().NumGroups(), blockSize, t)
	if err != nil {
		return nil, err
	}
	b := &model.Batch{Tokens: tokens, QueryStart: []int32{0, n}, ContextLens: []int32{n}, BlockTables: [][]int32{nil}}
	for p := range n {
		b.Positions = append(b.Positions, p)
		b.SlotMapping = append(b.SlotMapping, p)
		b.LogitIndices = append(b.LogitIndices, p)
		if p%blockSize == 0 {
			b.BlockTables[0] = append(b.BlockTables[0], p/blockSize)
		}
	}
	logits := make([]float32, int(n)*m.Config().VocabSize)
	if b, err = model.SpreadGroups(b, kv); err != nil {
		return nil, err
	}
	return logits, m.Forward(b, kv, logits)
}

// denseLogits returns d's logits of every position of tokens, rounded to
// float32 (a relative change of 2⁻²⁴, far under the differences measured).
func denseLogits(d *llama.Dense, tokens []int32) []float32 {
	rows := d.Forward(tokens)
	out := make([]float32, 0, len(rows)*len(rows[0]))
	for _, r := range rows {
		for _, v := range r {
			out = append(out, float32(v))
		}
	}
	return out
}

// compareLogits returns KL(p‖q) of the distributions of logits a (p) and
// b (q), whether their top-1 tokens agree, and p's log-probability margin
// of its top-1 over the token q prefers.
func compareLogits(a, b []float32) (kl float64, same bool, margin float64) {
	la, lb := logSumExp(a), logSumExp(b)
	ia, ib := 0, 0
	for i := range a {
		lpa, lpb := float64(a[i])-la, float64(b[i])-lb
		kl += math.Exp(lpa) * (lpa - lpb)
		if a[i] > a[ia] {
			ia = i
		}
		if b[i] > b[ib] {
			ib = i
		}
	}
	return max(kl, 0), ia == ib, float64(a[ia]) - float64(a[ib])
}

func logSumExp(x []float32) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}
