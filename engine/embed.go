package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"pagoda/sched"
	"pagoda/tokenizer"
)

// Embeddings: a request with a Pooling is prefill-only. Its prompt runs
// through the model like any other (scheduled, chunked, batched beside
// generation, its blocks in the paged cache); the final-norm hidden states
// of its positions (runner.Result.Hidden) are pooled into one vector, and
// the request finishes at the end of its prompt without sampling a token,
// so it never enters decode. Its final output carries the vector in
// RequestOutput.Embedding, not normalised (the caller decides).
//
// Last pooling reads only the last position, so the prompt's cached prefix
// is shared as a generation request's is. Mean and CLS pooling need the
// hidden state of every (or the first) position, so they ask for every
// row (sched.Group.AllLogits) and bypass the prefix cache, as prompt
// logprobs do.

// An embedding-only model (model.Config.Embedding: BERT) attends
// bidirectionally, so a token's hidden state depends on the whole input:
// its requests always compute every token (no prefix sharing, whatever the
// pooling) in one step (sched.Group.Whole: never chunked), an input longer
// than the step budget (--max-num-batched-tokens) is refused, and so is
// generation (ErrEmbeddingModel).

// ErrEmbeddingModel refuses a generation request to an embedding-only
// model.
var ErrEmbeddingModel = errors.New("the model is an embedding model: it serves embeddings only, not generation")

// DefaultPooling is the pooling the model's file names (llama.cpp's
// default for it: BERT's pooling_type), else last.
func (e *Engine) DefaultPooling() Pooling {
	if p, err := ParsePooling(e.model.Config().Pooling); err == nil {
		return p
	}
	return PoolLast
}

// Pooling is how an embedding request pools its positions' hidden states:
// vLLM's --pooling-type names (lower case). "" is a generation request.
type Pooling string

// The poolings.
const (
	PoolLast Pooling = "last" // the last position (decoder models: the one that has seen every token)
	PoolMean Pooling = "mean" // the mean over every position
	PoolCLS  Pooling = "cls"  // the first position
)

// Poolings lists the pooling names.
func Poolings() []string { return []string{string(PoolLast), string(PoolMean), string(PoolCLS)} }

// ParsePooling returns the pooling called name (case-insensitive is not
// accepted: the names are the flags').
func ParsePooling(name string) (Pooling, error) {
	if !slices.Contains(Poolings(), name) {
		return "", fmt.Errorf("pooling must be one of last, mean, cls; got %q", name)
	}
	return Pooling(name), nil
}

// embedState is an embedding request's pooling in progress.
type embedState struct {
	pooling Pooling
	sum     []float64 // mean: the sum of the rows pooled so far
	next    int       // the next prompt position to pool (mean, cls): rows recomputed after a preemption are not pooled twice
	vec     []float32 // the result, once the prompt is done
}

// newEmbedRequest validates an embedding request: a prompt within the
// model length (no room for generation needed); the sampling parameters
// are ignored.
func (e *Engine) newEmbedRequest(r Request) (*request, error) {
	switch r.Pooling {
	case PoolLast, PoolMean, PoolCLS:
	default:
		return nil, fmt.Errorf("pooling must be one of last, mean, cls; got %q", r.Pooling)
	}
	vocab := e.model.Config().VocabSize
	n, limit := len(r.PromptTokens), e.cfg.MaxModelLen
	if n == 0 {
		return nil, fmt.Errorf("prompt must contain at least one token")
	}
	if n > limit {
		return nil, fmt.Errorf("%w: the input has %d tokens and the model's maximum length is %d", ErrPromptTooLong, n, limit)
	}
	whole := e.model.Config().Embedding
	if budget := e.cfg.MaxNumBatchedTokens; whole && n > budget {
		return nil, fmt.Errorf("%w: the input has %d tokens; an embedding model's bidirectional attention computes it in one step, of at most %d tokens (--max-num-batched-tokens)", ErrPromptTooLong, n, budget)
	}
	for _, id := range r.PromptTokens {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("prompt token id %d is out of range [0, %d)", id, vocab)
		}
	}
	id := r.ID
	if id == "" {
		id = e.newID()
	}
	p := GreedyParams(1)
	req := &request{id: id, params: p, prompt: slices.Clone(r.PromptTokens), stream: newStream(),
		seqs: map[*sched.Sequence]*outputState{}, maxLen: n, stops: tokenizer.NewStopSet(nil),
		embed: &embedState{pooling: r.Pooling}}
	req.metrics.Arrival = time.Now()
	seq := &sched.Sequence{Tokens: slices.Clone(r.PromptTokens), NumPromptTokens: n}
	req.group = &sched.Group{RequestID: id, Priority: r.Priority, Seqs: []*sched.Sequence{seq},
		MaxSeqs: 1, AllLogits: r.Pooling != PoolLast || whole, Whole: whole}
	req.seqs[seq] = e.newOutputState(req, 0)
	return req, nil
}

// pool adds the hidden rows of one scheduled chunk of an embedding request
// (rows: the chunk's rows of hidden, dim wide) and, at the end of its
// prompt, finishes it with the pooled vector. It reports whether the
// request finished.
func (e *Engine) pool(r *request, sq sched.ScheduledSeq, hidden []float32, dim int) bool {
	es := r.embed
	count := len(hidden) / dim
	switch es.pooling {
	case PoolLast:
		if sq.Sample && count > 0 {
			es.vec = slices.Clone(hidden[(count-1)*dim:])
		}
	case PoolMean, PoolCLS:
		if es.sum == nil {
			es.sum = make([]float64, dim)
		}
		first := sq.Start + sq.NumTokens - count // the prompt position of the first row
		for j := range count {
			if first+j != es.next || es.next >= len(r.prompt) {
				continue
			}
			es.next++
			if es.pooling == PoolCLS && first+j > 0 {
				continue
			}
			for k, v := range hidden[j*dim : (j+1)*dim] {
				es.sum[k] += float64(v)
			}
		}
		if sq.Sample && es.next == len(r.prompt) {
			div := float64(len(r.prompt))
			if es.pooling == PoolCLS {
				div = 1
			}
			es.vec = make([]float32, dim)
			for k, v := range es.sum {
				es.vec[k] = float32(v / div)
			}
		}
	}
	if es.vec == nil {
		return false
	}
	q := sq.Seq
	st := r.seqs[q]
	st.finish, st.delta.FinishReason, st.hasDelta = FinishStop, FinishStop, true
	e.sched.FinishSeq(q)
	return true
}

// Normalize scales v to unit Euclidean length (a zero vector stays zero).
func Normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}
