package grammar

import (
	"math"
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
	set     []int32
	next    [256]int32
	mask    []uint64
	classes *[256]uint8 // the bytes that lead to the same state share a number (see step)
	final   bool        // set is {0}: complete, nothing can follow
	counted bool        // a stack of set holds an exact counter (see Compiled.abstract)

	// relaxed is 0 until computed, -1 when set holds no counter, else 1 + the id of
	// the relaxed state; minLeft the fewest iterations a counter of set allows (see
	// counters.go).
	relaxed, minLeft int32
	oneCounter       int32 // see relaxed: the one counter frame of every stack, or -1

	utf8, utf8R   int8     // 0 unknown, 1 or -1: whether every non-ASCII character loops (loopsUTF8)
	plain, plainR int8     // 0 unknown, 1 or -1: livePlain's answer
	done          [8]int32 // per UTF-8 decoding state: 0 unknown, else 1 + finishChar's answer

	dead      uint32 // the control bytes that kill every stack (deadControls)
	deadKnown bool

	// loopYes and loopNo are the bytes known to lead from the state back to itself, or not;
	// rloopYes and rloopNo the same up to relaxation (loopsTo); freshMin, when a byte needed
	// it, the fewest iterations the counters it entered afresh allow (0: none did).
	loopYes, loopNo   byteSet
	rloopYes, rloopNo byteSet
	freshMin          int32

	// stacks are, once stackLimit needed them, the stacks of the state (see stackBulk);
	// keepYes and keepNo, for a state of one relaxed frame, the bytes known to keep it or
	// not, and keepFresh the fewest iterations of the counters the kept ones entered
	// afresh (see keeps; 0 until computed).
	stacks          []stackBulk
	keepYes, keepNo byteSet
	keepFresh       int32
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

	mu        sync.Mutex
	nodes     []stackNode        // id 0 is the empty stack
	intern    map[uint64]int32   // pos<<32 | parent → id of the frame without a counter
	internCnt map[frameKey]int32 // (pos, parent, cnt) → id of a frame with a counter
	mark      []uint32           // per frame: the generation it was last added to an output set
	gen       uint32
	init      []int32
	abs       []int32 // per frame: its abstract frame (-1: not computed yet)
	relax     []int32 // per frame: its relaxed frame (-1: not computed yet)
	satur     int32   // abstract counters saturate here: longer than any token, plus 2

	states     []*state
	finalID    int32                  // the final state's id (-1: not met yet); walk reads it, not the state
	stateIdx   map[string]int32       // state key (the set's bytes) → id
	classIdx   map[string]*[256]uint8 // the top byte sets of a state (their ids) → byteClasses
	unitStarts map[int32][]int32      // per repeated rule: see beginsUnit
	epoch      int                    // counts cache resets; a matcher's state id is valid in its epoch
	cacheBytes int
	cacheLimit int
	scratch    []int32
	absBuf     []int32
	runBuf     [2][]int32

	// fuel is the work units the current operation may still spend (burn), fuelLimit and
	// fuelWhat its limit for the error; spent counts every unit burned (Work).
	fuel, fuelLimit int64
	fuelWhat        string
	spent           int64
}

// unlimited is the fuel of the operations without a budget (FillMask, Compile).
const unlimited = math.MaxInt64 / 2

// setFuel starts an operation that may spend limit work units (c.mu held).
func (c *Compiled) setFuel(limit int64, what string) {
	c.fuel, c.fuelLimit, c.fuelWhat = limit, limit, what
}

// burn spends n work units; past the operation's budget it panics with a *LimitError (the
// budgeted entry points recover it). What was computed so far stays valid: the interned
// frames, the states and their transitions are complete, only the operation's own result
// (a mask, a new state set) is dropped.
func (c *Compiled) burn(n int) {
	c.fuel -= int64(n)
	c.spent += int64(n)
	if c.fuel < 0 {
		panic(&LimitError{Limit: c.fuelWhat, Value: c.fuelLimit})
	}
}

// Work is the work units c has spent so far (compiling its start state, masks, accepted
// tokens), for tests and statistics.
func (c *Compiled) Work() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spent
}

// Compile binds g to v, without a limit on its work (see CompileWarm).
func Compile(g *Grammar, v *Vocab) *Compiled {
	c, _ := compile(g, v, unlimited)
	return c
}

// CompileWarm binds g to v within MaxCompileWork work units and computes the start state's
// token mask, so that a matcher's first mask is a copy: the expensive part of a grammar's
// first step happens here, where the caller chooses (a worker), not on a step. A grammar
// that needs more is refused with a *LimitError.
func CompileWarm(g *Grammar, v *Vocab) (*Compiled, error) {
	c, err := compile(g, v, MaxCompileWork)
	if err != nil {
		return nil, err
	}
	if err := c.warm(); err != nil {
		return nil, err
	}
	return c, nil
}

// warm computes the start state's mask with what is left of MaxCompileWork.
func (c *Compiled) warm() (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer catchLimit(&err)
	c.setFuel(MaxCompileWork-c.spent, compileWork)
	c.fuelLimit = MaxCompileWork
	set := c.init
	if c.anyCounted(set) {
		set = c.abstractSet(set)
	}
	c.maskOf(c.stateOf(set), len(c.init) > 0 && c.init[0] == 0)
	return nil
}

func compile(g *Grammar, v *Vocab, limit int64) (c *Compiled, err error) {
	c = &Compiled{g: g, p: g.prog, v: v, nodes: []stackNode{{}}, intern: map[uint64]int32{}, internCnt: map[frameKey]int32{},
		mark: []uint32{0}, stateIdx: map[string]int32{}, finalID: -1, cacheLimit: maxCacheBytes, satur: int32(v.maxLen + 2)}
	defer catchLimit(&err)
	c.setFuel(limit, compileWork)
	c.gen++
	for _, a := range c.p.alts[c.p.root] {
		c.init = c.expand(a, 0, 0, c.init)
	}
	slices.Sort(c.init)
	return c, nil
}

func setKey(set []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(set))), len(set)*4)
}

// stateOf interns the state of the sorted set (copied when new).
func (c *Compiled) stateOf(set []int32) int32 {
	if id, ok := c.stateIdx[string(setKey(set))]; ok {
		return id
	}
	st := &state{set: slices.Clone(set), final: len(set) == 1 && set[0] == 0, counted: c.anyCounted(set)}
	id := int32(len(c.states))
	if st.final {
		c.finalID = id
	}
	c.states = append(c.states, st)
	c.stateIdx[string(setKey(st.set))] = id
	c.cacheBytes += int(unsafe.Sizeof(*st)) + 8*len(set)
	return id
}

// step is the state after byte b from state s, or -1 when no stack survives. The bytes
// that every top byte set of s holds or lacks alike lead to the same state: the first of
// them computes it for all (see byteClasses).
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
	next := int32(-1)
	if len(out) > 0 {
		slices.Sort(out)
		next = c.stateOf(out) + 1
	}
	if st.classes == nil {
		st.classes = c.byteClasses(st.set)
	}
	if cl := st.classes; cl != nil {
		for x := range 256 {
			if cl[x] == cl[b] {
				st.next[x] = next
			}
		}
	} else {
		st.next[b] = next
	}
	return next - 1
}

// byteClasses numbers the bytes by the top byte sets of set that hold them: two bytes of
// one class lead to the same stacks (nil when the tops have more than 64 distinct sets).
func (c *Compiled) byteClasses(set []int32) *[256]uint8 {
	var ids [64]int32
	n := 0
	for _, id := range set {
		if id == 0 {
			continue
		}
		sid := c.nodes[id].set
		found := false
		for _, x := range ids[:n] {
			found = found || x == sid
		}
		if !found {
			if n == len(ids) {
				return nil
			}
			ids[n] = sid
			n++
		}
	}
	// states that differ in their counters or below their tops share the classes
	key := string(setKey(ids[:n]))
	if cl, ok := c.classIdx[key]; ok {
		return cl
	}
	var sig [256]uint64
	for i, sid := range ids[:n] {
		for w, x := range c.p.sets[sid] {
			for ; x != 0; x &= x - 1 {
				sig[w*64+bits.TrailingZeros64(x)] |= 1 << i
			}
		}
	}
	cl := new([256]uint8)
	var seen []uint64 // the signatures met, by class number (at most 256)
	for x := range 256 {
		k := slices.Index(seen, sig[x])
		if k < 0 {
			k = len(seen)
			seen = append(seen, sig[x])
		}
		cl[x] = uint8(k)
	}
	if c.classIdx == nil {
		c.classIdx = map[string]*[256]uint8{}
	}
	c.classIdx[key] = cl
	c.cacheBytes += 256 + len(key)
	return cl
}

// enter locks c and returns the state whose mask is m's: the state of m's stacks, or of
// their abstract form when they hold exact counters; it starts the cache over first when
// the cache is full.
func (c *Compiled) enter(m *Matcher) int32 {
	c.mu.Lock()
	if c.cacheBytes > c.cacheLimit {
		c.resetCacheLocked()
	}
	if m.epoch != c.epoch || m.sid < 0 {
		set := m.set
		if m.counted {
			set = c.abstractSet(set)
		}
		m.sid, m.epoch = c.stateOf(set), c.epoch
	}
	return m.sid
}

// abstractSet is the sorted set of the abstract forms of set's stacks.
func (c *Compiled) abstractSet(set []int32) []int32 {
	out := c.absBuf[:0]
	for _, id := range set {
		out = append(out, c.abstract(id))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	c.absBuf = out
	return out
}

// anyCounted reports whether a stack of set holds an exact counter.
func (c *Compiled) anyCounted(set []int32) bool {
	for _, id := range set {
		if c.nodes[id].counted {
			return true
		}
	}
	return false
}

func (c *Compiled) resetCacheLocked() {
	c.states = nil
	c.finalID = -1
	clear(c.stateIdx)
	clear(c.classIdx)
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
// sentence), whether a stack holds an exact counter (counted), and the id in the
// Compiled's cache of the state whose mask is its own (the set's state, or when counted
// the abstract set's; valid while epoch matches). Not safe for concurrent use.
type Matcher struct {
	c          *Compiled
	set        []int32
	counted    bool
	sid        int32
	epoch      int
	terminated bool
}

// NewMatcher is a matcher at the start of the grammar.
func (c *Compiled) NewMatcher() *Matcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Matcher{c: c, set: slices.Clone(c.init), counted: c.anyCounted(c.init), sid: -1}
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
