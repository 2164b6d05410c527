package engine

import (
	"errors"
	"fmt"

	"pagoda/gguf"
	"pagoda/kvcache"
	"pagoda/model"
	"pagoda/runner"
	"pagoda/sched"
)

// draftProposer is speculative decoding with a draft model (vLLM's
// draft_model method): a second, smaller model with the target's
// vocabulary, run by the engine loop before each step with its own paged
// KV cache (its own kvcache.Manager, runner.CacheEngine and runner.Runner),
// proposes greedily the k tokens that follow each decoding sequence.
//
// The draft keeps, per target sequence (keyed by its id), the KV of a
// prefix of the sequence's tokens. Before a step, for the sequences that
// speculate, it catches up on the tokens the target accepted since its
// last proposal (one prefill over all of them, chunked by the step's token
// budget), whose last row gives the first proposal, then runs k−1 batched
// decode steps for the others. The slots of the k−1 proposals it computes
// are reserved with kvcache.Manager.AppendSpeculative (the draft's cache
// has no prefix cache, so the token ids its blocks record serve only the
// bookkeeping); at the sequence's next proposal, Settle keeps the ones the
// target verified and gives the others back. A sequence that is not
// running (preempted, swapped) or finished loses its draft state, which is
// rebuilt from its tokens when it speculates again.
//
// Whatever the draft proposes, outputs are those of plain decoding: the
// target verifies every proposal (verify).
type draftProposer struct {
	model  model.Model
	blocks *kvcache.Manager
	runner *runner.Runner
	sizing KVCacheSizing
	vocab  int
	budget int // tokens per forward pass (--max-num-batched-tokens)

	seqs  map[int64]*draftSeq
	round uint64
	step  sched.Step
	rows  []draftRow
	work  []*draftWork
	zeros []int32
	// err is the last forward error: the draft then proposes nothing that
	// step and drops its state (plain decoding goes on).
	err error
	// forwards and forwardTokens count the draft's forward passes and the
	// tokens they computed (tests).
	forwards, forwardTokens int64
	// reused counts proposals served again (the target did not run the
	// sequence), dropped the states dropped while their sequence lived (preempted,
	// swapped or evicted for room), rebuilt the states rebuilt because
	// they were no prefix of the sequence.
	reused, dropped, rebuilt int64
}

// draftSeq is the draft's state of one target sequence.
type draftSeq struct {
	// toks are the tokens with a slot in the draft's cache: a prefix of
	// the target sequence, then the spec proposals computed after it.
	toks  []int32
	spec  int     // trailing proposals of toks not yet settled
	props []int32 // the last proposals (len ≥ spec), kept until the target moves on
	mark  uint64  // the last round the sequence was live
	used  uint64  // the last round it proposed (evictions take the oldest)
}

// draftWork is one sequence's proposal job of a round.
type draftWork struct {
	id    int64
	seq   *draftSeq
	q     *sched.Sequence
	k     int
	start int // the draft's first position to compute (its tokens before it are kept)
	next  int // catch-up: next position to compute
	end   int // the target's token count
	props []int32
}

type draftRow struct {
	id    int64
	toks  []int32
	start int
	logit bool
}

// newDraftProposer loads the draft model of c.Speculative.Model for the
// target tm (its GGUF tf) and sizes its KV cache: as many blocks as the
// target's cache (numBlocks; the draft's blocks hold the same tokens),
// at most what DisableByBatchSize sequences of --max-model-len hold, and
// at least one such sequence.
func newDraftProposer(c *Config, tm model.Model, tf *gguf.File, numBlocks int) (*draftProposer, error) {
	sc := c.Speculative
	if c.tpRanks() > 1 {
		return nil, errors.New("--speculative-config: a draft model with tensor parallelism is not supported")
	}
	opts := c.loadOptions()
	opts.TensorParallel = nil
	m, f, err := model.Load(sc.Model, opts)
	if err != nil {
		return nil, fmt.Errorf("--speculative-config: draft model: %w", err)
	}
	d, err := setupDraft(c, m, f, tm, tf, numBlocks)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("--speculative-config: draft model %s: %w", sc.Model, err)
	}
	return d, nil
}

func setupDraft(c *Config, m model.Model, f *gguf.File, tm model.Model, tf *gguf.File, numBlocks int) (*draftProposer, error) {
	if err := sameVocabulary(m.Config().VocabSize, f, tm.Config().VocabSize, tf); err != nil {
		return nil, err
	}
	mc := m.Config()
	if mc.ContextLen < c.MaxModelLen {
		return nil, fmt.Errorf("its context length %d is shorter than --max-model-len %d", mc.ContextLen, c.MaxModelLen)
	}
	lay := mc.KVLayout()
	per := int64(model.BlockBytes(lay.Tensors, c.BlockSize, mc.KVHeads, mc.HeadDim, c.KVCacheType))
	perSeq := c.seqBlocks(lay)
	s := KVCacheSizing{BlockBytes: per, SeqBlocks: perSeq, Groups: groupsText(lay)}
	limit := c.Speculative.DisableByBatchSize * perSeq
	if numBlocks <= limit {
		s.NumBlocks, s.Reason = numBlocks, "as many blocks as the target's cache"
	} else {
		s.NumBlocks, s.Reason = limit, fmt.Sprintf("disable_by_batch_size %d × --max-model-len %d", c.Speculative.DisableByBatchSize, c.MaxModelLen)
	}
	if s.NumBlocks < perSeq {
		return nil, fmt.Errorf("its KV cache (%s) holds %d blocks of %d tokens; one sequence of --max-model-len %d needs %d: "+
			"raise --kv-cache-memory or lower --max-model-len", s.Reason, s.NumBlocks, c.BlockSize, c.MaxModelLen, perSeq)
	}
	blocks, err := kvcache.New(kvcache.Config{BlockSize: c.BlockSize, NumBlocks: s.NumBlocks, Windows: lay.Windows})
	if err != nil {
		return nil, err
	}
	ce, err := runner.NewCacheEngine(m, s.NumBlocks, 0, c.BlockSize, c.KVCacheType)
	if err != nil {
		return nil, err
	}
	return &draftProposer{model: m, blocks: blocks, runner: runner.New(m, ce, runner.Options{}), sizing: s,
		vocab: mc.VocabSize, budget: max(c.MaxNumBatchedTokens, 1), seqs: map[int64]*draftSeq{}}, nil
}

// sameVocabulary refuses a draft (vocab logits, GGUF f) whose vocabulary
// differs from the target's: the logit count and every token's text.
func sameVocabulary(vocab int, f *gguf.File, targetVocab int, tf *gguf.File) error {
	if a, b := vocab, targetVocab; a != b {
		return fmt.Errorf("its vocabulary has %d tokens, the target's %d: a draft model must share the target's vocabulary", a, b)
	}
	const key = "tokenizer.ggml.tokens"
	dt, ok1 := f.Strings(key)
	tt, ok2 := tf.Strings(key)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s missing from the draft or the target: the vocabularies cannot be compared", key)
	}
	if len(dt) != len(tt) {
		return fmt.Errorf("its tokenizer has %d tokens, the target's %d: a draft model must share the target's vocabulary", len(dt), len(tt))
	}
	for i := range dt {
		if dt[i] != tt[i] {
			return fmt.Errorf("token %d is %q in the draft, %q in the target: a draft model must share the target's vocabulary", i, dt[i], tt[i])
		}
	}
	return nil
}

func (d *draftProposer) close() error { return d.model.Close() }

// The proposer interface: the draft proposes in batches (run), not per
// sequence.
func (d *draftProposer) propose(_ *proposerState, _ []int32, _ int, dst []int32) []int32 { return dst }
func (d *draftProposer) finished(id int64, _ []int32, _ int)                             { d.forget(id) }

// forget drops a sequence's draft state.
func (d *draftProposer) forget(id int64) {
	if _, ok := d.seqs[id]; ok {
		_ = d.blocks.Free(id) // cannot fail for a known sequence
		delete(d.seqs, id)
	}
}

// beginRound starts a round: live marks the sequences that keep their
// state; sweep then drops the others'.
func (d *draftProposer) beginRound() { d.round++ }

func (d *draftProposer) live(id int64) {
	if s := d.seqs[id]; s != nil {
		s.mark = d.round
	}
}

func (d *draftProposer) sweep() {
	for id, s := range d.seqs {
		if s.mark != d.round {
			d.forget(id)
			d.dropped++
		}
	}
}

// specJob is one sequence that speculates this step, with at most k
// proposals.
type specJob struct {
	q  *sched.Sequence
	st *outputState
	k  int
}

// run proposes for every job: catch-up prefill, then greedy decode steps.
// A job the draft's cache has no room for proposes nothing.
func (d *draftProposer) run(jobs []specJob) {
	d.work = d.work[:0]
	for _, j := range jobs {
		if w := d.prepare(j.q, j.k); w != nil {
			d.work = append(d.work, w)
		}
	}
	if len(d.work) == 0 {
		return
	}
	if err := d.generate(); err != nil {
		d.err = err
		for _, w := range d.work {
			d.forget(w.id)
		}
		return
	}
	for _, w := range d.work {
		s := w.seq
		s.toks = append(append(s.toks[:w.start], w.q.Tokens[w.start:w.end]...), w.props[:w.k-1]...)
		s.spec, s.props = w.k-1, w.props
		w.q.Spec = append(w.q.Spec[:0], w.props...)
	}
}

// prepare settles q's draft state against its tokens (keeping the
// proposals the target accepted), reuses the last proposals when the
// target has not moved since, or reserves the slots of the catch-up and of
// the proposals and returns the job.
func (d *draftProposer) prepare(q *sched.Sequence, k int) *draftWork {
	id, toks := q.ID, q.Tokens
	s := d.seqs[id]
	if s != nil && s.props != nil && len(toks) == len(s.toks)-s.spec {
		// Not scheduled last step: the proposals still stand.
		s.used = d.round
		q.Spec = append(q.Spec[:0], s.props[:min(k, len(s.props))]...)
		d.reused++
		return nil
	}
	if s != nil {
		keep := commonPrefix(s.toks, toks)
		keep = min(keep, len(toks)-1)
		if keep < len(s.toks)-s.spec || d.blocks.Settle(id, keep) != nil {
			d.forget(id) // not a prefix of the sequence: rebuild
			d.rebuilt++
			s = nil
		} else {
			s.toks, s.spec, s.props = s.toks[:keep], 0, nil
		}
	}
	if s == nil {
		if err := d.blocks.AllocateUncached(id, nil); err != nil {
			return nil
		}
		s = &draftSeq{mark: d.round}
		d.seqs[id] = s
	}
	s.used = d.round
	start := len(s.toks)
	n := len(toks) - start + k - 1
	if !d.makeRoom(id, n) {
		if start == 0 {
			d.forget(id)
		}
		return nil
	}
	for len(d.zeros) < k {
		d.zeros = append(d.zeros, 0)
	}
	res := append(toks[start:len(toks):len(toks)], d.zeros[:k-1]...)
	if _, err := d.blocks.AppendSpeculative(id, res, k-1, nil); err != nil {
		d.forget(id)
		return nil
	}
	return &draftWork{id: id, seq: s, q: q, k: k, start: start, next: start, end: len(toks), props: make([]int32, 0, k)}
}

// makeRoom frees the draft states of sequences that do not propose this
// round, least recently used first, until n more tokens of id fit.
func (d *draftProposer) makeRoom(id int64, n int) bool {
	for {
		need, err := d.blocks.NumAppendBlocks(id, n)
		if err != nil {
			return false
		}
		if need <= d.blocks.NumFreeBlocks() {
			return true
		}
		var victim int64
		var oldest *draftSeq
		for vid, s := range d.seqs {
			if s.used != d.round && (oldest == nil || s.used < oldest.used || s.used == oldest.used && vid < victim) {
				victim, oldest = vid, s
			}
		}
		if oldest == nil {
			return false
		}
		d.forget(victim)
		d.dropped++
	}
}

// generate runs the catch-up prefill (chunked by the token budget) and the
// decode steps of the round's work, filling each job's proposals.
func (d *draftProposer) generate() error {
	for {
		d.rows = d.rows[:0]
		var owners []*draftWork
		budget := d.budget
		for _, w := range d.work {
			if w.next == w.end || budget == 0 {
				continue
			}
			n := min(w.end-w.next, budget)
			last := w.next+n == w.end
			d.rows = append(d.rows, draftRow{id: w.id, toks: w.q.Tokens[w.next : w.next+n], start: w.next, logit: last})
			if last {
				owners = append(owners, w)
			}
			w.next += n
			budget -= n
		}
		if len(d.rows) == 0 {
			break
		}
		logits, err := d.forward()
		if err != nil {
			return err
		}
		for i, w := range owners {
			w.props = append(w.props, argmax(logits[i*d.vocab:(i+1)*d.vocab]))
		}
	}
	for j := 1; ; j++ {
		d.rows = d.rows[:0]
		var owners []*draftWork
		for _, w := range d.work {
			if j < w.k {
				d.rows = append(d.rows, draftRow{id: w.id, toks: w.props[j-1 : j], start: w.end + j - 1, logit: true})
				owners = append(owners, w)
			}
		}
		if len(d.rows) == 0 {
			return nil
		}
		logits, err := d.forward()
		if err != nil {
			return err
		}
		for i, w := range owners {
			w.props = append(w.props, argmax(logits[i*d.vocab:(i+1)*d.vocab]))
		}
	}
}

// forward runs d.rows through the draft model and returns the logits of
// the rows that asked for them, in order.
func (d *draftProposer) forward() ([]float32, error) {
	s := &d.step
	s.Reset()
	s.QueryStart = append(s.QueryStart, 0)
	s.LogitStart = append(s.LogitStart, 0)
	s.BlockTableStart = append(s.BlockTableStart, 0)
	for _, r := range d.rows {
		s.Tokens = append(s.Tokens, r.toks...)
		for p := range len(r.toks) {
			s.Positions = append(s.Positions, int32(r.start+p))
		}
		var f sched.SeqFlags
		if r.logit {
			f = sched.FlagSample
			s.LogitIndices = append(s.LogitIndices, int32(len(s.Tokens)-1))
		}
		s.SeqIDs = append(s.SeqIDs, r.id)
		s.Flags = append(s.Flags, f)
		s.QueryStart = append(s.QueryStart, int32(len(s.Tokens)))
		s.ContextLens = append(s.ContextLens, int32(r.start+len(r.toks)))
		s.LogitStart = append(s.LogitStart, int32(len(s.LogitIndices)))
	}
	s.Groups = int32(d.blocks.NumGroups())
	for g := range d.blocks.NumGroups() {
		for _, r := range d.rows {
			var err error
			if s.SlotMapping, err = d.blocks.SlotMapping(s.SlotMapping, r.id, g, r.start, r.start+len(r.toks)); err != nil {
				return nil, fmt.Errorf("draft model: %w", err)
			}
			s.Blocks = append(s.Blocks, d.blocks.GroupTable(r.id, g)...)
			s.BlockTableStart = append(s.BlockTableStart, int32(len(s.Blocks)))
		}
	}
	res, err := d.runner.Execute(s)
	if err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	d.forwards++
	d.forwardTokens += int64(len(s.Tokens))
	return res.Logits, nil
}

// argmax is the greedy token of a row (the lowest id among equals).
func argmax(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// closeDraft closes the draft model, if any.
func (e *Engine) closeDraft() error {
	if d, ok := e.spec.(*draftProposer); ok {
		return d.close()
	}
	return nil
}

// DraftKVCache is how New sized the draft model's KV cache (ok: a draft
// model runs).
func (e *Engine) DraftKVCache() (s KVCacheSizing, ok bool) {
	if d, ok := e.spec.(*draftProposer); ok {
		return d.sizing, true
	}
	return KVCacheSizing{}, false
}
