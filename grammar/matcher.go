package grammar

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"
)

// maxCacheBytes bounds a Compiled's mask cache; past it the cache starts over.
const maxCacheBytes = 64 << 20

// stackNode is one frame of a parse stack, interned: pos is where parsing continues (a kTerm
// elem when the frame is the top; a continuation after a call otherwise), parent the frame
// below (0: the bottom of the stack). set is the byte set of pos when it is a kTerm.
type stackNode struct {
	pos, parent, set int32
}

// Compiled is a Grammar bound to a Vocab. It owns the interned stack frames of its matchers and
// the mask cache, keyed by the canonical state (the sorted ids of the stacks' tops). Its
// methods lock mu, so matchers of one Compiled may run on different goroutines.
type Compiled struct {
	g *Grammar
	p *program
	v *Vocab

	mu        sync.Mutex
	nodes     []stackNode      // id 0 is the empty stack
	intern    map[uint64]int32 // pos<<32 | parent → id
	masks     map[string][]uint64
	maskBytes int
	mark      []uint32 // per node: the generation it was last added to an output set
	gen       uint32
	buf       []int32 // scratch of the trie walk: the state at each depth
	tmp       [2][]int32
	init      []int32
}

// Compile binds g to v.
func Compile(g *Grammar, v *Vocab) *Compiled {
	c := &Compiled{g: g, p: g.prog, v: v, nodes: []stackNode{{}}, intern: map[uint64]int32{},
		masks: map[string][]uint64{}, mark: []uint32{0}}
	c.gen++
	for _, a := range c.p.alts[c.p.root] {
		c.init = c.expand(a, 0, c.init)
	}
	slices.Sort(c.init)
	return c
}

// Matcher is one sequence's position in a grammar: the set of parse stacks (ids of their top
// frames, sorted; 0 is the empty stack, present exactly when the text so far is a complete
// sentence). Not safe for concurrent use.
type Matcher struct {
	c          *Compiled
	set        []int32
	terminated bool
}

// NewMatcher is a matcher at the start of the grammar.
func (c *Compiled) NewMatcher() *Matcher {
	return &Matcher{c: c, set: slices.Clone(c.init)}
}

// Clone is an independent copy of m (for forked sequences).
func (m *Matcher) Clone() *Matcher {
	return &Matcher{c: m.c, set: slices.Clone(m.set), terminated: m.terminated}
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
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := m.set
	for i := 0; i < len(piece); i++ {
		next := c.advance(cur, piece[i], c.tmp[i&1][:0])
		c.tmp[i&1] = next
		if len(next) == 0 {
			return fmt.Errorf("grammar: token %d (%q) not allowed here: byte %d does not fit", id, piece, i)
		}
		cur = next
	}
	slices.Sort(cur)
	m.set = append(m.set[:0], cur...)
	return nil
}

// FillMask sets bit id of mask (word id/64, bit id%64) exactly when token id may come next:
// its piece continues the text within the grammar, or it ends generation and CanEnd. mask
// must have (v.Size()+63)/64 words; ids past its end are left out. Masks are cached per state.
func (m *Matcher) FillMask(mask []uint64) {
	clear(mask)
	c := m.c
	if m.terminated {
		c.setEOG(mask)
		return
	}
	key := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(m.set))), len(m.set)*4)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.masks[string(key)]; ok {
		copy(mask, cached)
		return
	}
	full := make([]uint64, (len(c.v.pieces)+63)/64)
	c.walk(0, m.set, full)
	if m.CanEnd() {
		c.setEOG(full)
	}
	if c.maskBytes+8*len(full) > maxCacheBytes {
		clear(c.masks)
		c.maskBytes = 0
	}
	c.masks[string(key)] = full
	c.maskBytes += 8 * len(full)
	copy(mask, full)
}

func (c *Compiled) setEOG(mask []uint64) {
	for _, id := range c.v.eog {
		if int(id>>6) < len(mask) {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
}

// walk sets the bits of the tokens under trie node n that the state set accepts (set has
// consumed the bytes on the path to n), pruning subtrees whose state becomes empty.
func (c *Compiled) walk(n int32, set []int32, mask []uint64) {
	v := c.v
	lo, hi := v.childStart[n], v.childStart[n+1]
	var first byteSet
	if hi-lo > 8 {
		for _, s := range set {
			if s != 0 {
				first.or(&c.p.sets[c.nodes[s].set])
			}
		}
	}
	for e := lo; e < hi; e++ {
		b := v.edgeByte[e]
		if hi-lo > 8 && !first.has(b) {
			continue
		}
		start := len(c.buf)
		c.buf = c.advance(set, b, c.buf)
		if next := c.buf[start:]; len(next) > 0 {
			ch := v.edgeNode[e]
			for _, t := range v.toks[v.tokStart[ch]:v.tokStart[ch+1]] {
				mask[t>>6] |= 1 << (t & 63)
			}
			if len(next) > 1 || next[0] != 0 {
				c.walk(ch, next, mask)
			}
		}
		c.buf = c.buf[:start]
	}
}

func (s *byteSet) or(t *byteSet) {
	s[0] |= t[0]
	s[1] |= t[1]
	s[2] |= t[2]
	s[3] |= t[3]
}

// advance appends to out the state after byte b from state set (deduplicated, unsorted).
func (c *Compiled) advance(set []int32, b byte, out []int32) []int32 {
	c.gen++
	if c.gen == 0 {
		clear(c.mark)
		c.gen = 1
	}
	for _, s := range set {
		if s == 0 {
			continue
		}
		n := c.nodes[s]
		if c.p.sets[n.set].has(b) {
			out = c.expand(n.pos+1, n.parent, out)
		}
	}
	return out
}

// expand appends the stacks reached from "continue at pos, then return to parent" by calling
// rules and returning from finished alternatives until each top is a byte set (or the stack
// is empty: id 0). A call whose return would only end its caller's alternative is a tail call
// and pushes no frame, so repetitions do not grow the stack.
func (c *Compiled) expand(pos, parent int32, out []int32) []int32 {
	for {
		e := c.p.elems[pos]
		switch e.kind {
		case kEnd:
			if parent == 0 {
				return c.add(0, out)
			}
			f := c.nodes[parent]
			pos, parent = f.pos, f.parent
		case kTerm:
			if c.p.sets[e.arg].empty() {
				return out
			}
			return c.add(c.frame(pos, parent), out)
		case kRef:
			ret := parent
			if c.p.elems[pos+1].kind != kEnd {
				ret = c.frame(pos+1, parent)
			}
			for _, a := range c.p.alts[e.arg] {
				out = c.expand(a, ret, out)
			}
			return out
		}
	}
}

func (c *Compiled) add(id int32, out []int32) []int32 {
	if c.mark[id] == c.gen {
		return out
	}
	c.mark[id] = c.gen
	return append(out, id)
}

// frame interns the frame (pos, parent).
func (c *Compiled) frame(pos, parent int32) int32 {
	k := uint64(pos)<<32 | uint64(uint32(parent))
	if id, ok := c.intern[k]; ok {
		return id
	}
	id := int32(len(c.nodes))
	set := int32(-1)
	if e := c.p.elems[pos]; e.kind == kTerm {
		set = e.arg
	}
	c.nodes = append(c.nodes, stackNode{pos: pos, parent: parent, set: set})
	c.mark = append(c.mark, 0)
	c.intern[k] = id
	return id
}
