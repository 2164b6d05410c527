package grammar

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"
)

// maxCacheBytes bounds a Compiled's cache of states, transitions and masks (about 1 KiB a
// state and 6 KiB a mask for a 49,152-token vocabulary); past it the cache starts over
// (matchers keep their stacks, so nothing they hold is lost).
const maxCacheBytes = 64 << 20

// state is a set of stacks (sorted ids of their tops) as a node of the lazily built
// deterministic automaton: next[b] is 0 while unknown, -1 when byte b kills every stack, else
// 1 + the id of the state after b. mask is the state's token mask once computed.
type state struct {
	set   []int32
	next  [256]int32
	mask  []uint64
	final bool // set is {0}: complete, nothing can follow

	// loopYes and loopNo are the bytes known to lead from the state back to itself, or not.
	loopYes, loopNo byteSet
}

// bulkMin is the subtree size from which walk checks whether a state loops on every byte
// below a trie node (then all the subtree's tokens are allowed without walking it).
const bulkMin = 16

// Compiled is a Grammar bound to a Vocab. It owns the interned stack frames of its matchers and
// a cache: the states met so far with their transitions and masks. Its methods lock mu, so
// matchers of one Compiled may run on different goroutines.
type Compiled struct {
	g *Grammar
	p *program
	v *Vocab

	mu     sync.Mutex
	nodes  []stackNode      // id 0 is the empty stack
	intern map[uint64]int32 // pos<<32 | parent → frame id
	mark   []uint32         // per frame: the generation it was last added to an output set
	gen    uint32
	init   []int32

	states     []*state
	stateIdx   map[string]int32 // state key (the set's bytes) → id
	epoch      int              // counts cache resets; a matcher's state id is valid in its epoch
	cacheBytes int
	cacheLimit int
	scratch    []int32
}

// Compile binds g to v.
func Compile(g *Grammar, v *Vocab) *Compiled {
	c := &Compiled{g: g, p: g.prog, v: v, nodes: []stackNode{{}}, intern: map[uint64]int32{},
		mark: []uint32{0}, stateIdx: map[string]int32{}, cacheLimit: maxCacheBytes}
	c.gen++
	for _, a := range c.p.alts[c.p.root] {
		c.init = c.expand(a, 0, c.init)
	}
	slices.Sort(c.init)
	return c
}

func setKey(set []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(set))), len(set)*4)
}

// stateOf interns the state of the sorted set (copied when new).
func (c *Compiled) stateOf(set []int32) int32 {
	if id, ok := c.stateIdx[string(setKey(set))]; ok {
		return id
	}
	st := &state{set: slices.Clone(set), final: len(set) == 1 && set[0] == 0}
	id := int32(len(c.states))
	c.states = append(c.states, st)
	c.stateIdx[string(setKey(st.set))] = id
	c.cacheBytes += int(unsafe.Sizeof(*st)) + 8*len(set)
	return id
}

// step is the state after byte b from state s, or -1 when no stack survives.
func (c *Compiled) step(s int32, b byte) int32 {
	st := c.states[s]
	switch n := st.next[b]; {
	case n > 0:
		return n - 1
	case n < 0:
		return -1
	}
	out := c.advance(st.set, b, c.scratch[:0])
	c.scratch = out
	if len(out) == 0 {
		st.next[b] = -1
		return -1
	}
	slices.Sort(out)
	ns := c.stateOf(out)
	st.next[b] = ns + 1
	return ns
}

// enter locks c and returns the state of m, starting the cache over first when it is full.
func (c *Compiled) enter(m *Matcher) int32 {
	c.mu.Lock()
	if c.cacheBytes > c.cacheLimit {
		c.resetCacheLocked()
	}
	if m.epoch != c.epoch || m.sid < 0 {
		m.sid, m.epoch = c.stateOf(m.set), c.epoch
	}
	return m.sid
}

func (c *Compiled) resetCacheLocked() {
	c.states = nil
	clear(c.stateIdx)
	c.cacheBytes = 0
	c.epoch++
}

// MemoryBytes estimates the memory c holds beyond its Grammar and Vocab: the state cache
// (bounded: it starts over past 64 MiB) and the interned stack frames, which grow with the
// distinct parse stacks met (bounded by the grammar for non-recursive grammars; with nesting
// depth for recursive ones such as JSONObject). A server that keeps Compiled values can drop
// one past a size of its choosing; its matchers stay valid.
func (c *Compiled) MemoryBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	const perFrame = int(unsafe.Sizeof(stackNode{})) + 4 + 24 // frame, mark, map entry
	return c.cacheBytes + len(c.nodes)*perFrame
}

// resetCache empties the cache (benchmarks of cold masks).
func (c *Compiled) resetCache() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetCacheLocked()
}

// Matcher is one sequence's position in a grammar: the set of parse stacks (ids of their top
// frames, sorted; 0 is the empty stack, present exactly when the text so far is a complete
// sentence), and its state id in the Compiled's cache (valid while epoch matches). Not safe
// for concurrent use.
type Matcher struct {
	c          *Compiled
	set        []int32
	sid        int32
	epoch      int
	terminated bool
}

// NewMatcher is a matcher at the start of the grammar.
func (c *Compiled) NewMatcher() *Matcher {
	return &Matcher{c: c, set: slices.Clone(c.init), sid: -1}
}

// Clone is an independent copy of m (for forked sequences).
func (m *Matcher) Clone() *Matcher {
	cp := *m
	cp.set = slices.Clone(m.set)
	return &cp
}

// CanEnd reports whether the text so far is a complete sentence of the grammar.
func (m *Matcher) CanEnd() bool { return len(m.set) > 0 && m.set[0] == 0 }

// Terminated reports whether an end-of-generation token was accepted, or nothing but one can
// follow (the text is complete and the grammar allows no more).
func (m *Matcher) Terminated() bool {
	return m.terminated || (len(m.set) == 1 && m.set[0] == 0)
}

// Accept advances m by token id. A token not allowed next (its bit clear in FillMask) is an
// error and leaves m unchanged. An end-of-generation token is allowed exactly when CanEnd; it
// terminates m, after which only end-of-generation tokens are accepted.
func (m *Matcher) Accept(id int32) error {
	v := m.c.v
	if id < 0 || int(id) >= len(v.pieces) {
		return fmt.Errorf("grammar: token %d out of range (vocabulary of %d)", id, len(v.pieces))
	}
	if v.isEOG[id] {
		if !m.CanEnd() && !m.terminated {
			return fmt.Errorf("grammar: end of generation (token %d) before the grammar is complete", id)
		}
		m.terminated = true
		return nil
	}
	if m.terminated {
		return fmt.Errorf("grammar: token %d after the end of generation", id)
	}
	piece := v.pieces[id]
	if piece == "" {
		return fmt.Errorf("grammar: token %d is never allowed (special or empty)", id)
	}
	c := m.c
	s := c.enter(m)
	defer c.mu.Unlock()
	for i := 0; i < len(piece); i++ {
		if s = c.step(s, piece[i]); s < 0 {
			return fmt.Errorf("grammar: token %d (%q) not allowed here: byte %d does not fit", id, piece, i)
		}
	}
	m.sid = s
	m.set = append(m.set[:0], c.states[s].set...)
	return nil
}

// Allows reports whether Accept(id) would succeed, without changing m (a sampler can check
// its choice first and fill the mask only when the choice is refused).
func (m *Matcher) Allows(id int32) bool {
	v := m.c.v
	switch {
	case id < 0 || int(id) >= len(v.pieces):
		return false
	case v.isEOG[id]:
		return m.terminated || m.CanEnd()
	case m.terminated || v.pieces[id] == "":
		return false
	}
	c := m.c
	s := c.enter(m)
	defer c.mu.Unlock()
	piece := v.pieces[id]
	for i := 0; i < len(piece) && s >= 0; i++ {
		s = c.step(s, piece[i])
	}
	return s >= 0
}

// FillMask sets bit id of mask (word id/64, bit id%64) exactly when token id may come next:
// its piece continues the text within the grammar, or it ends generation and CanEnd. mask
// must have (v.Size()+63)/64 words; ids past its end are left out. Once m is terminated the
// mask holds the end-of-generation tokens only. Masks are cached per state.
func (m *Matcher) FillMask(mask []uint64) {
	c := m.c
	if m.terminated {
		clear(mask)
		c.setEOG(mask)
		return
	}
	s := c.enter(m)
	defer c.mu.Unlock()
	st := c.states[s]
	if st.mask == nil {
		full := make([]uint64, (len(c.v.pieces)+63)/64)
		c.walk(0, s, full)
		if m.CanEnd() {
			c.setEOG(full)
		}
		st.mask = full
		c.cacheBytes += 8 * len(full)
	}
	n := copy(mask, st.mask)
	clear(mask[n:])
}

func (c *Compiled) setEOG(mask []uint64) {
	for _, id := range c.v.eog {
		if int(id>>6) < len(mask) {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
}

// walk sets the bits of the tokens under trie node n that state s accepts (s has consumed
// the bytes on the path to n), pruning the subtrees where no stack survives.
func (c *Compiled) walk(n, s int32, mask []uint64) {
	v := c.v
	if v.subEnd[n]-n >= bulkMin && c.loops(s, &v.subBytes[n]) {
		for _, t := range v.toks[v.tokStart[n+1]:v.tokStart[v.subEnd[n]]] {
			mask[t>>6] |= 1 << (t & 63)
		}
		return
	}
	st := c.states[s]
	for e := v.childStart[n]; e < v.childStart[n+1]; e++ {
		ns := st.next[v.edgeByte[e]] - 1
		if ns == -1 { // unknown
			ns = c.step(s, v.edgeByte[e])
		}
		if ns < 0 {
			continue
		}
		ch := v.edgeNode[e]
		for _, t := range v.toks[v.tokStart[ch]:v.tokStart[ch+1]] {
			mask[t>>6] |= 1 << (t & 63)
		}
		if !c.states[ns].final {
			c.walk(ch, ns, mask)
		}
	}
}

// loops reports whether every byte in bs leads from state s back to s (inside a JSON string,
// most bytes do): then every token made of those bytes is allowed and keeps the state.
func (c *Compiled) loops(s int32, bs *byteSet) bool {
	st := c.states[s]
	if st.final {
		return false
	}
	var missing byteSet
	for w := range bs {
		if bs[w]&st.loopNo[w] != 0 {
			return false
		}
		missing[w] = bs[w] &^ st.loopYes[w]
	}
	for w, x := range missing {
		for ; x != 0; x &= x - 1 {
			b := byte(w*64 + bits.TrailingZeros64(x))
			if c.step(s, b) != s {
				st.loopNo.add(b, b)
				return false
			}
			st.loopYes.add(b, b)
		}
	}
	return true
}
