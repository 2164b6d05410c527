package kvcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// fakeKV stands in for the device and host memory of the KV cache: one
// value per slot. The value at position p of a sequence is a hash of its
// tokens[0..p], so a slot is right only when its block really holds this
// sequence's prefix: prefix-cache hits, copies and swaps are all checked
// against what a real cache would contain.
type fakeKV struct {
	bs        int
	dev, host []uint64 // (blocks, blockSize)
}

func (f *fakeKV) copyBlock(dst []uint64, d int32, src []uint64, s int32) {
	copy(dst[int(d)*f.bs:int(d+1)*f.bs], src[int(s)*f.bs:int(s+1)*f.bs])
}

// kvOf chains one token onto the KV value of the previous position.
func kvOf(prev uint64, tok int32) uint64 {
	x := (prev ^ uint64(uint32(tok))) * 0x9e3779b97f4a7c15
	return x ^ x>>29 ^ 1
}

// shadow is the test's own record of a sequence.
type shadow struct {
	tokens []int32
	kv     []uint64 // kv[p] = kvOf(kv[p-1], tokens[p])
	first  int      // the first position of the last reservation (what a step computes first)
}

// groupKV is the value group g holds for a position whose group-0 value is
// v: the groups' memories differ, as different layers' K/V do.
func groupKV(v uint64, g int) uint64 { return v ^ uint64(g)*0x51ed27 }

func (s *shadow) push(toks []int32) {
	for _, t := range toks {
		prev := uint64(0)
		if n := len(s.kv); n > 0 {
			prev = s.kv[n-1]
		}
		s.tokens = append(s.tokens, t)
		s.kv = append(s.kv, kvOf(prev, t))
	}
}

type workload struct {
	t         *testing.T
	m         *Manager
	rng       *rand.Rand
	kv        fakeKV
	seqs      map[int64]*shadow
	nextID    int64
	templates [][]int32
	counts    map[string]int
	copies    []Copy
	swaps     []Swap
	slots     []int32
}

func newWorkload(t *testing.T, cfg Config, seed uint64) *workload {
	w := &workload{
		t:      t,
		m:      newManager(t, cfg),
		rng:    rand.New(rand.NewPCG(seed, 7)),
		kv:     fakeKV{bs: cfg.BlockSize, dev: make([]uint64, cfg.NumBlocks*cfg.BlockSize), host: make([]uint64, cfg.NumHostBlocks*cfg.BlockSize)},
		seqs:   map[int64]*shadow{},
		counts: map[string]int{},
	}
	for range 3 {
		w.templates = append(w.templates, w.randTokens(max(3*cfg.BlockSize+2, 12)))
	}
	return w
}

func (w *workload) randTokens(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(w.rng.IntN(4))
	}
	return out
}

// pick returns up to n distinct random live sequences on the host or device.
func (w *workload) pick(n int, onHost bool) []int64 {
	var ids []int64
	for id := range w.seqs {
		if w.m.SwappedOut(id) == onHost {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// writeKV "computes" positions [from, len) of seqID into device memory.
func (w *workload) writeKV(seqID int64, from int) {
	s := w.seqs[seqID]
	s.first = from
	for g := range w.m.NumGroups() {
		var err error
		w.slots, err = w.m.SlotMapping(w.slots[:0], seqID, g, from, len(s.tokens))
		if err != nil {
			w.t.Fatal(err)
		}
		for i, slot := range w.slots {
			w.kv.dev[slot] = groupKV(s.kv[from+i], g)
		}
	}
}

func (w *workload) agree(op string, can bool, err error, sentinel error) bool {
	w.t.Helper()
	if err != nil && !errors.Is(err, sentinel) {
		w.t.Fatalf("%s: unexpected error %v", op, err)
	}
	if can != (err == nil) {
		w.t.Fatalf("%s: check said %v, operation error %v", op, can, err)
	}
	if err != nil {
		w.counts[op+" refused"]++
		return false
	}
	w.counts[op]++
	return true
}

func (w *workload) allocate() {
	bs := w.m.BlockSize()
	tpl := w.templates[w.rng.IntN(len(w.templates))]
	prompt := slices.Concat(tpl[:w.rng.IntN(len(tpl)+1)], w.randTokens(w.rng.IntN(bs+2)))
	id := w.nextID
	w.nextID++
	status := w.m.CanAllocate(prompt)
	predicted := w.m.NumCachedTokens(prompt)
	cached, err := w.m.Allocate(id, prompt)
	if !w.agree("allocate", status == AllocOK, err, ErrNoFreeBlocks) {
		return
	}
	if cached != predicted {
		w.t.Fatalf("Allocate cached %d tokens, NumCachedTokens said %d", cached, predicted)
	}
	if cached%bs != 0 || (len(prompt) > 0 && cached >= len(prompt)) || (len(prompt) == 0 && cached != 0) {
		w.t.Fatalf("Allocate(%d tokens) cached %d", len(prompt), cached)
	}
	s := &shadow{}
	s.push(prompt)
	w.seqs[id] = s
	w.writeKV(id, cached)
}

func (w *workload) appendSlots() {
	ids := w.pick(1, false)
	if len(ids) == 0 {
		return
	}
	id, n := ids[0], 1
	if w.rng.IntN(10) < 3 {
		n = 1 + w.rng.IntN(w.m.BlockSize()+1)
	}
	toks := w.randTokens(n)
	can := w.m.CanAppend(id, n)
	var err error
	w.copies, err = w.m.AppendSlots(id, toks, w.copies[:0])
	if !w.agree("append", can, err, ErrNoFreeBlocks) {
		return
	}
	for _, c := range w.copies {
		w.kv.copyBlock(w.kv.dev, c.Dst, w.kv.dev, c.Src)
		w.counts["copy"]++
	}
	s := w.seqs[id]
	from := len(s.tokens)
	s.push(toks)
	w.writeKV(id, from)
}

// speculate appends a token and proposals (speculative decoding), checks
// the invariants with them pending (a block holding a proposal is never
// hashed), and settles a random number of them, or frees the sequence.
func (w *workload) speculate() {
	ids := w.pick(1, false)
	if len(ids) == 0 {
		return
	}
	id, k := ids[0], 1+w.rng.IntN(w.m.BlockSize()+3)
	toks := w.randTokens(1 + k)
	s := w.seqs[id]
	base := len(s.tokens) + 1
	can := w.m.CanAppend(id, 1+k)
	var err error
	w.copies, err = w.m.AppendSpeculative(id, toks, k, w.copies[:0])
	if !w.agree("speculate", can, err, ErrNoFreeBlocks) {
		return
	}
	for _, c := range w.copies {
		w.kv.copyBlock(w.kv.dev, c.Dst, w.kv.dev, c.Src)
	}
	from := len(s.tokens)
	s.push(toks)
	w.writeKV(id, from)
	if err := w.m.CheckInvariants(); err != nil {
		w.t.Fatalf("with proposals pending: %v", err)
	}
	if w.rng.IntN(4) == 0 { // the sequence ends on a proposal: freed unsettled
		if err := w.m.Free(id); err != nil {
			w.t.Fatalf("Free: %v", err)
		}
		delete(w.seqs, id)
		w.counts["speculate freed"]++
		return
	}
	keep := base + w.rng.IntN(k+1)
	if err := w.m.Settle(id, keep); err != nil {
		w.t.Fatalf("Settle: %v", err)
	}
	s.tokens, s.kv = s.tokens[:keep], s.kv[:keep]
	s.first = from
	w.counts["speculate"]++
}

func (w *workload) fork() {
	ids := w.pick(1, w.rng.IntN(4) == 0)
	if len(ids) == 0 {
		return
	}
	child := w.nextID
	w.nextID++
	if err := w.m.Fork(ids[0], child); err != nil {
		w.t.Fatalf("Fork: %v", err)
	}
	p := w.seqs[ids[0]]
	w.seqs[child] = &shadow{tokens: slices.Clone(p.tokens), kv: slices.Clone(p.kv), first: p.first}
	w.counts["fork"]++
}

func (w *workload) free() {
	ids := w.pick(1, w.rng.IntN(3) == 0)
	if len(ids) == 0 {
		return
	}
	if err := w.m.Free(ids[0]); err != nil {
		w.t.Fatalf("Free: %v", err)
	}
	delete(w.seqs, ids[0])
	w.counts["free"]++
}

func (w *workload) swap(out bool) {
	group := w.pick(1+w.rng.IntN(3), !out)
	if len(group) == 0 {
		return
	}
	var err error
	if out {
		can := w.m.CanSwapOut(group)
		w.swaps, err = w.m.SwapOut(group, w.swaps[:0])
		if !w.agree("swap out", can, err, ErrNoSwapSpace) {
			return
		}
		for _, s := range w.swaps {
			w.kv.copyBlock(w.kv.host, s.Dst, w.kv.dev, s.Src)
		}
		return
	}
	distinct := map[int32]bool{}
	for _, id := range group {
		for g := range w.m.NumGroups() {
			for _, b := range w.m.GroupTable(id, g) {
				distinct[b] = b != NullBlock
			}
		}
	}
	delete(distinct, NullBlock)
	can := w.m.CanSwapIn(group)
	w.swaps, err = w.m.SwapIn(group, w.swaps[:0])
	if !w.agree("swap in", can, err, ErrNoFreeBlocks) {
		return
	}
	w.counts["swap in reused"] += len(distinct) - len(w.swaps)
	for _, s := range w.swaps {
		w.kv.copyBlock(w.kv.dev, s.Dst, w.kv.host, s.Src)
	}
}

// verify checks the invariants, every sequence's token ids, and the KV
// value of every slot it owns.
func (w *workload) verify(step int, op string) {
	if err := w.m.CheckInvariants(); err != nil {
		w.t.Fatalf("step %d (%s): %v", step, op, err)
	}
	if w.m.NumSequences() != len(w.seqs) {
		w.t.Fatalf("step %d (%s): %d sequences, want %d", step, op, w.m.NumSequences(), len(w.seqs))
	}
	bs := w.m.BlockSize()
	for id, s := range w.seqs {
		if w.m.Window(0) == 0 {
			if got := tokensOf(w.m, id); !slices.Equal(got, s.tokens) {
				w.t.Fatalf("step %d (%s): seq %d tokens %v, want %v", step, op, id, got, s.tokens)
			}
		}
		mem := w.kv.dev
		if w.m.SwappedOut(id) {
			mem = w.kv.host
		}
		for g := range w.m.NumGroups() {
			table := w.m.GroupTable(id, g)
			// A sliding-window group keeps what the last step's first query
			// reads, and nothing before it (O(window) memory).
			gone := w.m.released(w.m.Window(g), s.first)
			for p, want := range s.kv {
				b := table[p/bs]
				if (b == NullBlock) != (p/bs < gone) {
					w.t.Fatalf("step %d (%s): seq %d group %d (window %d) position %d in block %d, %d blocks released after position %d",
						step, op, id, g, w.m.Window(g), p, b, gone, s.first)
				}
				if b == NullBlock {
					continue
				}
				if got := mem[int(b)*bs+p%bs]; got != groupKV(want, g) {
					w.t.Fatalf("step %d (%s): seq %d group %d position %d holds KV %#x, want %#x (swapped out %v)",
						step, op, id, g, p, got, groupKV(want, g), w.m.SwappedOut(id))
				}
			}
		}
	}
}

// TestRandomWorkload runs thousands of random operations per configuration
// and checks the invariants and the simulated cache contents after each.
func TestRandomWorkload(t *testing.T) {
	const steps = 3000
	layouts := []struct {
		name    string
		windows func(bs int) []int // KV groups (Config.Windows)
	}{
		{"full", func(int) []int { return nil }},
		{"hybrid", func(bs int) []int { return []int{0, 2, bs + 3, 0, 2} }},
		{"sliding", func(bs int) []int { return []int{bs + 1} }},
	}
	for _, lay := range layouts {
		for _, bs := range []int{1, 4, 16, 128} {
			for _, mode := range []string{"nocache", "cache", "collisions"} {
				if lay.name != "full" && mode == "collisions" && bs > 4 {
					continue
				}
				windows := lay.windows(bs)
				t.Run(fmt.Sprintf("%s/bs=%d/%s", lay.name, bs, mode), func(t *testing.T) {
					cfg := Config{BlockSize: bs, NumBlocks: 40 * max(1, len(windows)), NumHostBlocks: 16 * max(1, len(windows)),
						EnablePrefixCaching: mode != "nocache", Windows: windows}
					w := newWorkload(t, cfg, uint64(bs)*31+uint64(len(mode)))
					if mode == "collisions" {
						mask := BlockHash(3) // a few hashes per group: hits must still happen
						if len(windows) > 1 {
							mask = 63
						}
						w.m.hashFn = func(p BlockHash, toks []int32) BlockHash { return hashBlock(p, toks) & mask }
					}
					w.run(steps)
					w.drain()
					for _, op := range []string{"allocate", "allocate refused", "append", "append refused", "copy", "fork", "free", "swap out", "swap in", "speculate"} {
						if w.counts[op] == 0 && (op != "copy" || bs > 1) { // a block of 1 is never partial
							t.Errorf("no %q in %d steps: %v", op, steps, w.counts)
						}
					}
					if st := w.m.Stats(); cfg.EnablePrefixCaching && (st.HitBlocks == 0 || st.Evictions == 0 || w.counts["swap in reused"] == 0) {
						t.Errorf("prefix cache never hit, evicted or reused on swap-in: %+v %v", st, w.counts)
					}
					if !cfg.EnablePrefixCaching && w.counts["swap in reused"] != 0 {
						t.Errorf("swap-in reused %d blocks with caching off", w.counts["swap in reused"])
					}
					t.Logf("%v %+v", w.counts, w.m.Stats())
				})
			}
		}
	}
}

func (w *workload) run(steps int) {
	ops := []struct {
		name   string
		weight int
		do     func()
	}{
		{"allocate", 22, w.allocate},
		{"append", 30, w.appendSlots},
		{"speculate", 8, w.speculate},
		{"fork", 9, w.fork},
		{"free", 14, w.free},
		{"swap out", 7, func() { w.swap(true) }},
		{"swap in", 10, func() { w.swap(false) }},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	for step := range steps {
		r := w.rng.IntN(total)
		for _, op := range ops {
			if r -= op.weight; r < 0 {
				if len(w.seqs) >= 24 && (op.name == "allocate" || op.name == "fork") {
					w.free()
				} else {
					op.do()
				}
				w.verify(step, op.name)
				break
			}
		}
	}
}

// drain frees every sequence and checks that every block is free again.
func (w *workload) drain() {
	for id := range w.seqs {
		if err := w.m.Free(id); err != nil {
			w.t.Fatal(err)
		}
		delete(w.seqs, id)
		w.verify(-1, "drain")
	}
	d, h := w.m.Device(), w.m.Host()
	if d.NumFree() != d.NumBlocks() || h.NumFree() != h.NumBlocks() || w.m.Usage() != 0 {
		w.t.Fatalf("after freeing all: device %d/%d free, host %d/%d free, usage %v",
			d.NumFree(), d.NumBlocks(), h.NumFree(), h.NumBlocks(), w.m.Usage())
	}
}
