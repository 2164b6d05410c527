package sched

import (
	"errors"
	"fmt"

	"pagoda/kvcache"
)

// Step is the complete, self-contained description of one forward step:
// everything the runner needs, and nothing it has to look up elsewhere (no
// sequence, group or block-manager state). Schedule fills Output.Step; the
// runner executes it. With tensor parallelism, rank 0 broadcasts its wire
// form (AppendBinary) and every rank executes the same Step on its shard of
// the model, with the same block ids.
//
// Layout, for three sequences (A: prompt tokens 0..4, B: a decode token at
// position 9, C: a prompt chunk 4..6) with BlockSize 4:
//
//	SeqIDs:          [A B C]                          (numSeqs)
//	Flags:           [Sample Sample 0]                (numSeqs; C's chunk does not sample)
//	Tokens:          [a0 a1 a2 a3 a4 | b9 | c4 c5 c6] (numTokens)
//	Positions:       [0  1  2  3  4  | 9  | 4  5  6 ] (numTokens)
//	SlotMapping:     block*BlockSize + offset of each token's K/V (numTokens)
//	QueryStart:      [0 5 6 9]       rows of seq i: [QueryStart[i], QueryStart[i+1])
//	ContextLens:     [5 10 7]        tokens in context after the step
//	BlockTableStart: [0 2 5 7]       blocks of seq i: Blocks[BlockTableStart[i]:BlockTableStart[i+1]]
//	Blocks:          [A's 2 | B's 3 | C's 2] physical block ids, logical order
//	LogitIndices:    [4 5]           rows of Tokens whose logits are returned, in order
//	LogitStart:      [0 1 2 2]       logit rows of seq i: [LogitStart[i], LogitStart[i+1])
//	Split:           2               dual-batch overlap: micro-batches A, B | C (0: one batch)
//
// A model with several KV cache groups (Groups > 1, see kvcache) has a
// block table per sequence and a slot per token in each group, group by
// group: SlotMapping holds group 0's numTokens slots, then group 1's, …;
// BlockTableStart has Groups·numSeqs+1 entries, group g's table of sequence
// i being entry g·numSeqs+i (GroupTable). A sliding-window group's tables
// hold kvcache.NullBlock for the blocks out of every query's window.
//
// Invariants (Validate checks them; the scheduler never breaks them): the
// prefix arrays have numSeqs+1 entries starting at 0 and never decrease
// (all three may be empty when numSeqs is 0); QueryStart ends at numTokens,
// BlockTableStart at len(Blocks), LogitStart at len(LogitIndices); every
// sequence computes ≥ 1 token; the tokens of sequence i sit at positions
// ContextLens[i]−q … ContextLens[i]−1 (q its query length), in order; its
// logit rows lie inside its own rows, increasing; 0 ≤ Split < numSeqs
// (Split > 0: sequences [0, Split) form the first micro-batch, the rest
// the second; see DBO and Splitter). CheckBlocks adds the
// bounds a given cache imposes (block ids, slots, block-table coverage).
//
// Cache operations run before the forward pass: SwapOut, then SwapIn, then
// Copies (see runner.CacheEngine.Apply). A step may carry only cache
// operations and no sequences.
type Step struct {
	SeqIDs          []int64
	Flags           []SeqFlags
	QueryStart      []int32
	ContextLens     []int32
	BlockTableStart []int32
	Blocks          []int32
	LogitStart      []int32

	Tokens       []int32
	Positions    []int32
	SlotMapping  []int32
	LogitIndices []int32

	// Split is where dual-batch overlap cuts the step: the number of
	// sequences in the first micro-batch, 0 when the step runs as one batch.
	Split int32
	// Groups is the number of KV cache groups (0 means 1).
	Groups int32

	SwapOut []kvcache.Swap // device → host
	SwapIn  []kvcache.Swap // host → device
	Copies  []kvcache.Copy // device → device (copy-on-write)
}

// SeqFlags describe a scheduled sequence beyond its tokens.
type SeqFlags uint8

const (
	// FlagSample: the chunk reaches the end of the sequence's tokens, its
	// last row samples the next token.
	FlagSample SeqFlags = 1 << iota
	// FlagAllLogits: the logits of every computed position are wanted
	// (prompt logprobs, or proposals to verify); such a step runs from a
	// prefill plan.
	FlagAllLogits

	flagsKnown = FlagSample | FlagAllLogits
)

// NumSeqs is the number of scheduled sequences.
func (s *Step) NumSeqs() int { return len(s.ContextLens) }

// NumTokens is the number of query tokens.
func (s *Step) NumTokens() int { return len(s.Tokens) }

// QueryLen is the number of tokens sequence i computes.
func (s *Step) QueryLen(i int) int { return int(s.QueryStart[i+1] - s.QueryStart[i]) }

// NumGroups is the number of KV cache groups, ≥ 1.
func (s *Step) NumGroups() int { return max(int(s.Groups), 1) }

// BlockTable is sequence i's group-0 block table (a view into Blocks).
func (s *Step) BlockTable(i int) []int32 { return s.GroupTable(0, i) }

// GroupTable is sequence i's block table in KV group g (a view into Blocks).
func (s *Step) GroupTable(g, i int) []int32 {
	k := g*s.NumSeqs() + i
	return s.Blocks[s.BlockTableStart[k]:s.BlockTableStart[k+1]:s.BlockTableStart[k+1]]
}

// GroupSlots is group g's SlotMapping (a view).
func (s *Step) GroupSlots(g int) []int32 {
	n := len(s.Tokens)
	return s.SlotMapping[g*n : (g+1)*n : (g+1)*n]
}

// NumLogits is the number of logit rows of sequence i.
func (s *Step) NumLogits(i int) int { return int(s.LogitStart[i+1] - s.LogitStart[i]) }

// Reset empties the step, keeping its buffers.
func (s *Step) Reset() {
	s.SeqIDs, s.Flags, s.QueryStart, s.ContextLens = s.SeqIDs[:0], s.Flags[:0], s.QueryStart[:0], s.ContextLens[:0]
	s.BlockTableStart, s.Blocks, s.LogitStart = s.BlockTableStart[:0], s.Blocks[:0], s.LogitStart[:0]
	s.Tokens, s.Positions, s.SlotMapping, s.LogitIndices = s.Tokens[:0], s.Positions[:0], s.SlotMapping[:0], s.LogitIndices[:0]
	s.SwapOut, s.SwapIn, s.Copies = s.SwapOut[:0], s.SwapIn[:0], s.Copies[:0]
	s.Split, s.Groups = 0, 0
}

// fill appends the sequences of seqs to the step (whose cache operations
// are already recorded), reading token ids from the sequences and block
// tables and slots from kv. It allocates only while the step grows past
// its largest size so far.
func (s *Step) fill(seqs []ScheduledSeq, kv *kvcache.Manager) error {
	s.QueryStart = append(s.QueryStart[:0], 0)
	s.BlockTableStart = append(s.BlockTableStart[:0], 0)
	s.LogitStart = append(s.LogitStart[:0], 0)
	for _, sq := range seqs {
		q := sq.Seq
		end := sq.Start + sq.NumTokens
		row := int32(len(s.Tokens))
		s.Tokens = append(s.Tokens, q.Tokens[sq.Start:end]...)
		for p := sq.Start; p < end; p++ {
			s.Positions = append(s.Positions, int32(p))
		}
		var f SeqFlags
		switch {
		case sq.Group.AllLogits || sq.NumSpec > 0:
			f |= FlagAllLogits
			for i := range int32(sq.NumTokens) {
				s.LogitIndices = append(s.LogitIndices, row+i)
			}
		case sq.Sample:
			s.LogitIndices = append(s.LogitIndices, row+int32(sq.NumTokens)-1)
		}
		if sq.Sample {
			f |= FlagSample
		}
		s.SeqIDs = append(s.SeqIDs, q.ID)
		s.Flags = append(s.Flags, f)
		s.QueryStart = append(s.QueryStart, int32(len(s.Tokens)))
		s.ContextLens = append(s.ContextLens, int32(end))
		s.LogitStart = append(s.LogitStart, int32(len(s.LogitIndices)))
	}
	s.Groups = int32(kv.NumGroups())
	for g := range kv.NumGroups() {
		for _, sq := range seqs {
			var err error
			if s.SlotMapping, err = kv.SlotMapping(s.SlotMapping, sq.Seq.ID, g, sq.Start, sq.Start+sq.NumTokens); err != nil {
				return fmt.Errorf("sched: request %s: %w", sq.Group.RequestID, err)
			}
			s.Blocks = append(s.Blocks, kv.GroupTable(sq.Seq.ID, g)...)
			s.BlockTableStart = append(s.BlockTableStart, int32(len(s.Blocks)))
		}
	}
	return nil
}

// ErrInvalidStep is wrapped by every error of Validate, CheckBlocks and
// UnmarshalBinary.
var ErrInvalidStep = errors.New("sched: invalid step")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidStep}, args...)...)
}

// Validate checks the invariants in Step's documentation. It does not
// allocate unless it fails.
func (s *Step) Validate() error {
	n := s.NumSeqs()
	if len(s.SeqIDs) != n || len(s.Flags) != n {
		return invalid("%d sequence ids and %d flags for %d sequences", len(s.SeqIDs), len(s.Flags), n)
	}
	if s.Groups < 0 || s.Groups > 64 {
		return invalid("%d KV cache groups", s.Groups)
	}
	g := s.NumGroups()
	if len(s.Positions) != len(s.Tokens) || len(s.SlotMapping) != g*len(s.Tokens) {
		return invalid("%d positions and %d slots for %d tokens in %d groups", len(s.Positions), len(s.SlotMapping), len(s.Tokens), g)
	}
	if s.Split < 0 || (s.Split > 0 && int(s.Split) >= n) {
		return invalid("split after %d of %d sequences", s.Split, n)
	}
	if n == 0 && len(s.QueryStart) <= 1 && len(s.BlockTableStart) <= 1 && len(s.LogitStart) <= 1 {
		if len(s.Tokens)+len(s.Blocks)+len(s.LogitIndices) != 0 {
			return invalid("tokens, blocks or logits without sequences")
		}
		return nil
	}
	for _, p := range []struct {
		name string
		a    []int32
		end  int
		n    int
	}{{"QueryStart", s.QueryStart, len(s.Tokens), n}, {"BlockTableStart", s.BlockTableStart, len(s.Blocks), g * n},
		{"LogitStart", s.LogitStart, len(s.LogitIndices), n}} {
		if err := checkPrefix(p.name, p.a, p.n, p.end); err != nil {
			return err
		}
	}
	for i := range n {
		if err := s.validateSeq(i); err != nil {
			return err
		}
	}
	return nil
}

// checkPrefix checks a prefix-sum array of n+1 entries from 0 to end.
func checkPrefix(name string, a []int32, n, end int) error {
	if len(a) != n+1 || a[0] != 0 || int(a[n]) != end {
		return invalid("%s must have %d entries from 0 to %d", name, n+1, end)
	}
	for i := range n {
		if a[i+1] < a[i] {
			return invalid("%s decreases at %d", name, i)
		}
	}
	return nil
}

func (s *Step) validateSeq(i int) error {
	q, ctx := s.QueryLen(i), int(s.ContextLens[i])
	if q < 1 || ctx < q {
		return invalid("sequence %d computes %d tokens with %d in context", i, q, ctx)
	}
	if s.Flags[i]&^flagsKnown != 0 {
		return invalid("sequence %d has unknown flags %#x", i, s.Flags[i])
	}
	first := int(s.QueryStart[i])
	for j := range q {
		if int(s.Positions[first+j]) != ctx-q+j {
			return invalid("sequence %d: token %d at position %d, want %d", i, j, s.Positions[first+j], ctx-q+j)
		}
	}
	prev := int32(first - 1)
	for _, r := range s.LogitIndices[s.LogitStart[i]:s.LogitStart[i+1]] {
		if r <= prev || int(r) >= first+q {
			return invalid("sequence %d: logit row %d outside its rows [%d, %d) or out of order", i, r, first, first+q)
		}
		prev = r
	}
	return nil
}

// CheckBlocks checks the step against a cache of numBlocks device blocks,
// numHostBlocks host blocks and blockSize slots per block: block ids and
// slots in range (slot −1 writes nothing), each block table covering its
// context; kvcache.NullBlock only in a group with a window (windows[g] > 0;
// nil: no group has one), only for blocks wholly before the window of the
// sequence's first query. Call it after Validate.
func (s *Step) CheckBlocks(numBlocks, numHostBlocks, blockSize int, windows []int) error {
	for _, sl := range s.SlotMapping {
		if sl < -1 || int64(sl) >= int64(numBlocks)*int64(blockSize) {
			return invalid("slot %d outside %d blocks of %d", sl, numBlocks, blockSize)
		}
	}
	for g := range s.NumGroups() {
		w := 0
		if g < len(windows) {
			w = windows[g]
		}
		for i := range s.NumSeqs() {
			t := s.GroupTable(g, i)
			if have := len(t) * blockSize; have < int(s.ContextLens[i]) {
				return invalid("sequence %d group %d: %d tokens of context, its blocks hold %d", i, g, s.ContextLens[i], have)
			}
			// The first query reads keys from position first−w+1 on.
			first := int(s.ContextLens[i]) - s.QueryLen(i)
			for k, b := range t {
				switch {
				case b == kvcache.NullBlock && (w <= 0 || (k+1)*blockSize > first-w+1):
					return invalid("sequence %d group %d: block %d released but read (window %d, first query %d)", i, g, k, w, first)
				case b != kvcache.NullBlock && (b < 0 || int(b) >= numBlocks):
					return invalid("block %d outside the %d device blocks", b, numBlocks)
				}
			}
		}
	}
	for _, c := range s.Copies {
		if min(c.Src, c.Dst) < 0 || int(max(c.Src, c.Dst)) >= numBlocks {
			return invalid("copy %d → %d outside the %d device blocks", c.Src, c.Dst, numBlocks)
		}
	}
	for _, ops := range [2]struct {
		sw       []kvcache.Swap
		src, dst int
	}{{s.SwapOut, numBlocks, numHostBlocks}, {s.SwapIn, numHostBlocks, numBlocks}} {
		for _, w := range ops.sw {
			if w.Src < 0 || int(w.Src) >= ops.src || w.Dst < 0 || int(w.Dst) >= ops.dst {
				return invalid("swap %d → %d out of range", w.Src, w.Dst)
			}
		}
	}
	return nil
}
