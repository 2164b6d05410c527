package main

import (
	"math/rand/v2"

	"pagoda/model"
)

// seqRunner drives a model directly on a paged KV cache: sequence s owns
// blocks [s·per, (s+1)·per) in order, and tokens are random ids.
type seqRunner struct {
	m      model.Model
	kv     *model.KVCache
	bs     int
	tables [][]int32 // (seqs, per) physical blocks of each sequence
	vocab  int
	rng    *rand.Rand
	b      model.Batch
	logits []float32 // (seqs in the step, vocab)
	seqs   []int     // scratch: the sequences of a batched step
	pos    []int     // scratch: their first positions
	ns     []int     // scratch: their token counts
}

// newSeqRunner allocates a cache for seqs sequences of up to maxCtx tokens.
func newSeqRunner(m model.Model, seqs, maxCtx, bs int, kvType model.KVType, seed uint64) (*seqRunner, error) {
	per := (maxCtx + bs - 1) / bs
	kv, err := m.NewKVCache(seqs*per, bs, kvType)
	if err != nil {
		return nil, err
	}
	r := &seqRunner{m: m, kv: kv, bs: bs, vocab: m.Config().VocabSize, rng: rand.New(rand.NewPCG(seed, 2))}
	for s := range seqs {
		t := make([]int32, per)
		for i := range t {
			t[i] = int32(s*per + i)
		}
		r.tables = append(r.tables, t)
	}
	if res, ok := m.(model.Reserver); ok {
		res.Reserve(max(maxCtx, seqs), seqs)
	}
	return r, nil
}

// run is one forward step: sequence seqs[i] gets ns[i] new tokens from
// position pos[i]; the logits of each sequence's last token are computed.
func (r *seqRunner) run(seqs, pos, ns []int) error {
	b := &r.b
	b.Tokens, b.Positions, b.SlotMapping = b.Tokens[:0], b.Positions[:0], b.SlotMapping[:0]
	b.QueryStart, b.ContextLens, b.BlockTables = append(b.QueryStart[:0], 0), b.ContextLens[:0], b.BlockTables[:0]
	b.LogitIndices = b.LogitIndices[:0]
	for i, s := range seqs {
		t := r.tables[s]
		for p := pos[i]; p < pos[i]+ns[i]; p++ {
			b.Tokens = append(b.Tokens, int32(r.rng.IntN(r.vocab)))
			b.Positions = append(b.Positions, int32(p))
			b.SlotMapping = append(b.SlotMapping, t[p/r.bs]*int32(r.bs)+int32(p%r.bs))
		}
		ctx := pos[i] + ns[i]
		b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
		b.ContextLens = append(b.ContextLens, int32(ctx))
		b.BlockTables = append(b.BlockTables, t[:(ctx+r.bs-1)/r.bs])
		b.LogitIndices = append(b.LogitIndices, int32(len(b.Tokens)-1))
	}
	if n := len(seqs) * r.vocab; cap(r.logits) < n {
		r.logits = make([]float32, n)
	}
	return r.m.Forward(b, r.kv, r.logits[:len(seqs)*r.vocab])
}

// prefill runs n tokens of sequence s from position pos in one step.
func (r *seqRunner) prefill(s, pos, n int) error {
	return r.run([]int{s}, []int{pos}, []int{n})
}

// decodeOne decodes steps tokens of sequence 0 from an empty context.
func (r *seqRunner) decodeOne(steps int) error {
	for p := range steps {
		if err := r.run([]int{0}, []int{p}, []int{1}); err != nil {
			return err
		}
	}
	return nil
}

// prefillAll gives sequences 0..b-1 ctx tokens of context each.
func (r *seqRunner) prefillAll(b, ctx int) error {
	for s := range b {
		if err := r.prefill(s, 0, ctx); err != nil {
			return err
		}
	}
	return nil
}

// decodeBatch runs steps decode steps of sequences 0..b-1 together, from
// position ctx on.
func (r *seqRunner) decodeBatch(b, ctx, steps int) error {
	r.seqs, r.pos, r.ns = r.seqs[:0], r.pos[:0], r.ns[:0]
	for s := range b {
		r.seqs, r.pos, r.ns = append(r.seqs, s), append(r.pos, ctx), append(r.ns, 1)
	}
	for range steps {
		if err := r.run(r.seqs, r.pos, r.ns); err != nil {
			return err
		}
		for i := range r.pos {
			r.pos[i]++
		}
	}
	return nil
}
