package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"pagoda/sched"
)

// SpeculativeConfig is vLLM's --speculative-config: speculative decoding,
// in which cheap proposals of the next tokens are verified by one step of
// the model. Each row's arithmetic is batch-invariant, so a verified token
// has exactly the logits it would have had without speculation, and the
// sampler walks the rows left to right drawing exactly what plain decoding
// draws (the same processors, penalties, grammar mask and random stream):
// speculation never changes an output, only how many steps produce it.
type SpeculativeConfig struct {
	// Method: "ngram" (prompt lookup: the tokens that followed the latest
	// earlier occurrence of the sequence's last n tokens, n from
	// PromptLookupMax down to PromptLookupMin), "suffix" (suffix
	// decoding: the continuation most often seen after the longest suffix
	// of the sequence found in its own tokens or in recent requests'
	// outputs, grown while its estimated probability stays above
	// SuffixMinTokenProb, so the draft length adapts) or "draft_model"
	// (a smaller model with the same vocabulary, Model, proposes greedily;
	// draft.go). As in vLLM, a Model without a Method means "draft_model"
	// ("[ngram]": "ngram").
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	PromptLookupMin      int    `json:"prompt_lookup_min"`
	PromptLookupMax      int    `json:"prompt_lookup_max"`
	// DisableByBatchSize: no proposals while at least this many sequences
	// run (vLLM's disable_by_batch_size): a big batch keeps the cores busy,
	// and verifying proposals would cost its sequences compute. 0: 8.
	DisableByBatchSize int `json:"disable_by_batch_size"`
	// Suffix decoding (Arctic Inference's parameters, as vLLM names them).
	SuffixMaxTreeDepth      int     `json:"suffix_decoding_max_tree_depth"`
	SuffixMaxCachedRequests int     `json:"suffix_decoding_max_cached_requests"`
	SuffixMinTokenProb      float64 `json:"suffix_decoding_min_token_prob"`
	SuffixMaxSpecFactor     float64 `json:"suffix_decoding_max_spec_factor"`
	// Model is the draft model's GGUF (method "draft_model").
	Model string `json:"model"`
	// DisableLogprobs is accepted for vLLM's sake: logprobs are those of
	// plain decoding either way.
	DisableLogprobs *bool `json:"disable_logprobs"`
}

// ParseSpeculativeConfig reads --speculative-config (JSON), fills the
// defaults and validates it. Unknown fields are an error naming them.
func ParseSpeculativeConfig(s string) (*SpeculativeConfig, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var c SpeculativeConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("--speculative-config: %v", err)
	}
	if err := c.resolve(); err != nil {
		return nil, fmt.Errorf("--speculative-config: %w", err)
	}
	return &c, nil
}

// resolve fills the defaults and checks the ranges.
func (c *SpeculativeConfig) resolve() error {
	if c.Method == "" && c.Model != "" { // vLLM detects the method from the model
		switch c.Model {
		case "[ngram]", "ngram":
			c.Method, c.Model = "ngram", ""
		default:
			c.Method = "draft_model"
		}
	}
	switch c.Method {
	case "ngram":
		if c.NumSpeculativeTokens == 0 {
			return fmt.Errorf(`method "ngram" needs num_speculative_tokens`)
		}
		if c.PromptLookupMax == 0 {
			c.PromptLookupMax = max(c.PromptLookupMin, 5)
		}
		if c.PromptLookupMin == 0 {
			c.PromptLookupMin = min(c.PromptLookupMax, 2)
		}
		if c.PromptLookupMin < 1 || c.PromptLookupMin > c.PromptLookupMax || c.PromptLookupMax > 64 {
			return fmt.Errorf("prompt_lookup_min %d and prompt_lookup_max %d: want 1 ≤ min ≤ max ≤ 64", c.PromptLookupMin, c.PromptLookupMax)
		}
	case "suffix":
		if c.SuffixMaxTreeDepth == 0 {
			c.SuffixMaxTreeDepth = 24
		}
		if c.NumSpeculativeTokens == 0 {
			c.NumSpeculativeTokens = c.SuffixMaxTreeDepth
		}
		if c.SuffixMaxCachedRequests == 0 {
			c.SuffixMaxCachedRequests = 1000
		}
		if c.SuffixMinTokenProb == 0 {
			c.SuffixMinTokenProb = 0.1
		}
		if c.SuffixMaxSpecFactor == 0 {
			c.SuffixMaxSpecFactor = 1
		}
		if c.SuffixMaxTreeDepth < 1 || c.SuffixMaxTreeDepth > 64 || c.SuffixMaxCachedRequests < 0 ||
			c.SuffixMinTokenProb < 0 || c.SuffixMinTokenProb > 1 || c.SuffixMaxSpecFactor <= 0 {
			return fmt.Errorf("suffix_decoding_max_tree_depth %d (1..64), max_cached_requests %d (≥ 0), min_token_prob %v (0..1), max_spec_factor %v (> 0)",
				c.SuffixMaxTreeDepth, c.SuffixMaxCachedRequests, c.SuffixMinTokenProb, c.SuffixMaxSpecFactor)
		}
	case "draft_model":
		if c.Model == "" {
			return fmt.Errorf(`method "draft_model" needs model (the draft model's GGUF file)`)
		}
		if c.NumSpeculativeTokens == 0 {
			return fmt.Errorf(`method "draft_model" needs num_speculative_tokens`)
		}
	case "eagle", "eagle3", "mtp", "medusa", "mlp_speculator":
		return fmt.Errorf("method %q is not supported yet (ngram, suffix and draft_model are)", c.Method)
	case "":
		return fmt.Errorf(`method is required: "ngram", "suffix" or "draft_model"`)
	default:
		return fmt.Errorf("unknown method %q (ngram, suffix or draft_model)", c.Method)
	}
	if c.Model != "" && c.Method != "draft_model" {
		return fmt.Errorf("model %q: method %q uses no model", c.Model, c.Method)
	}
	if c.NumSpeculativeTokens < 1 || c.NumSpeculativeTokens > 64 {
		return fmt.Errorf("num_speculative_tokens %d: want 1..64", c.NumSpeculativeTokens)
	}
	if c.DisableByBatchSize == 0 {
		c.DisableByBatchSize = 8
	}
	if c.DisableByBatchSize < 1 {
		return fmt.Errorf("disable_by_batch_size %d: want ≥ 1", c.DisableByBatchSize)
	}
	return nil
}

// propose gives every decoding sequence its proposals for the next step,
// unless speculation is off, too many sequences run
// (DisableByBatchSize), or the sequence's guesses keep failing. Requests
// that keep every row's logits (prompt logprobs) and beam searches do not
// speculate, nor a request with best_of > 1 before its first token (a
// prompt served from the prefix cache but for its last token is one
// token from decoding): its first draw forks the other sequences. A
// sequence proposes at most what its max_tokens and the
// model length leave after the token it samples anyway.
//
// A draft model proposes for all of them at once (draftProposer.run), and
// first drops the draft state of the sequences that no longer run.
func (e *Engine) propose() {
	if e.spec == nil {
		return
	}
	d, _ := e.spec.(*draftProposer)
	running := 0
	if d != nil {
		d.beginRound()
	}
	for _, r := range e.reqs {
		running += r.group.NumUnfinished()
		for q, st := range r.seqs {
			if d != nil && st.finish == "" && q.Status == sched.StatusRunning {
				d.live(q.ID)
			}
		}
	}
	if d != nil {
		d.sweep()
	}
	if running >= e.cfg.Speculative.DisableByBatchSize {
		return
	}
	e.jobs = e.jobs[:0]
	for _, r := range e.reqs {
		if r.beam != nil || r.group.AllLogits || (!r.forked && r.params.bestOf() > 1) {
			continue // a request forks its other sequences at its first sample, which sample() draws
		}
		for q, st := range r.seqs {
			q.Spec = q.Spec[:0]
			if st.finish != "" || q.Status != sched.StatusRunning || q.NumTokens()-q.NumComputedTokens != 1 {
				continue
			}
			k := min(e.cfg.Speculative.NumSpeculativeTokens, r.params.MaxTokens-len(q.Output())-1,
				e.cfg.MaxModelLen-q.NumTokens()-1)
			if k <= 0 || st.prop.paused() {
				continue
			}
			if d != nil {
				e.jobs = append(e.jobs, specJob{q: q, st: st, k: k})
				continue
			}
			q.Spec = e.spec.propose(&st.prop, q.Tokens, k, q.Spec)
		}
	}
	if d != nil {
		d.run(e.jobs)
	}
}

// verify walks the rows of a sequence that computed its last token and
// NumSpec proposals: row j samples the token after position start+j exactly
// as plain decoding would (sampleOne), and the walk goes on while that
// token equals the proposal the step computed at the next position. The
// proposals are taken off the sequence first and the KV of the rejected
// ones given back after (sched.Settle).
func (e *Engine) verify(r *request, sq sched.ScheduledSeq, rows []float32, vocab int) {
	q, st := sq.Seq, r.seqs[sq.Seq]
	k := sq.NumSpec
	e.draft = append(e.draft[:0], q.Tokens[len(q.Tokens)-k:]...)
	q.Tokens = q.Tokens[:len(q.Tokens)-k]
	accepted := 0
	for j := 0; j <= k; j++ {
		e.sampleOne(r, q, rows[j*vocab:(j+1)*vocab])
		if j == k || q.Tokens[len(q.Tokens)-1] != e.draft[j] {
			break
		}
		accepted++ // the proposal stands (even if it ends the sequence)
		if st.finish != "" {
			break
		}
	}
	if err := e.sched.Settle(q, sq, accepted); err != nil {
		e.finishRequest(r, FinishAbort, err)
		return
	}
	st.prop.record(k, accepted)
	sp := &e.stats.Spec
	sp.Drafts++
	sp.DraftTokens += int64(k)
	sp.Accepted += int64(accepted)
	for len(sp.AcceptedPerPos) < k {
		sp.AcceptedPerPos = append(sp.AcceptedPerPos, 0)
	}
	for j := range accepted {
		sp.AcceptedPerPos[j]++
	}
}
