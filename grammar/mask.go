package grammar

import (
	"math/bits"
	"slices"
)

// FillMask sets bit id of mask (word id/64, bit id%64) exactly when token id may come next:
// its piece continues the text within the grammar, or it ends generation and CanEnd. mask
// must have (v.Size()+63)/64 words; ids past its end are left out. Once m is terminated the
// mask holds the end-of-generation tokens only. Masks are cached per state.
func (m *Matcher) FillMask(mask []uint64) {
	m.fillMask(mask, unlimited)
}

// TryFillMask is FillMask within MaxStepWork work units: a mask that needs more is not
// computed, and the error (a *LimitError) says so; mask is then cleared. The work done
// stays cached, so a later call costs less.
func (m *Matcher) TryFillMask(mask []uint64) error {
	return m.fillMask(mask, MaxStepWork)
}

func (m *Matcher) fillMask(mask []uint64, limit int64) (err error) {
	c := m.c
	if m.terminated {
		clear(mask)
		c.setEOG(mask)
		return nil
	}
	s := c.enter(m)
	defer c.mu.Unlock()
	defer func() {
		if err != nil {
			clear(mask)
		}
	}()
	defer catchLimit(&err)
	c.setFuel(limit, stepWork)
	n := copy(mask, c.maskOf(s, m.CanEnd()))
	clear(mask[n:])
	return nil
}

// maskOf is the mask of state s (canEnd: its stacks include the empty one), computed and
// cached on first use (c.mu held).
func (c *Compiled) maskOf(s int32, canEnd bool) []uint64 {
	st := c.states[s]
	if st.mask == nil {
		full := make([]uint64, (len(c.v.pieces)+63)/64)
		c.walk(0, s, full)
		if canEnd {
			c.setEOG(full)
		}
		st.mask = full
		c.cacheBytes += 8 * len(full)
	}
	return st.mask
}

func (c *Compiled) setEOG(mask []uint64) {
	for _, id := range c.v.eog {
		if int(id>>6) < len(mask) {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
}

// maxOneByOne bounds the tokens of a subtree walkBulk checks one by one (beyond it, the
// walk below the node is cheaper).
const maxOneByOne = 512

// walkBulk sets the bits of the tokens under n that s takes when bulk says which they are,
// and reports whether it did. Tokens with " or \, with a control byte that was dead when
// taken on the path to n, or beginning more characters past n than s's counters surely
// allow (one stack may allow more than another), are checked one by one.
func (c *Compiled) walkBulk(n, s int32, mask []uint64) bool {
	v := c.v
	bt, ok := c.bulk(n, s)
	if !ok {
		return false
	}
	toks := v.toks[v.tokStart[n+1]:v.tokStart[v.subEnd[n]]]
	c.burn(1 + len(toks)/16)
	if bt.all && bt.limit >= v.below[n] {
		for _, t := range toks {
			mask[t>>6] |= 1 << (t & 63)
		}
		return true
	}
	first, base := v.tokStart[n+1], v.startsAt[n]
	one := specialQuote | specialBackslash | uint64(bt.dead&v.pathCtl[n])
	if b, ok := v.bits[n]; ok && c.walkBits(n, s, bt, b, one, mask) {
		return true
	}
	special, starts := v.tokSpecial[first:first+int32(len(toks))], v.tokStarts[first:first+int32(len(toks))]
	if bt.limit < v.below[n] && !bt.exact {
		over := 0
		for _, x := range starts {
			if x-base > bt.limit {
				if over++; over > maxOneByOne {
					return false
				}
			}
		}
	}
	for i, t := range toks {
		switch sp := special[i]; {
		case sp&one != 0:
		case sp&uint64(bt.dead) != 0:
			continue
		case starts[i]-base <= bt.limit:
			mask[t>>6] |= 1 << (t & 63)
			continue
		case bt.exact:
			continue
		}
		if c.takes(s, v.pieces[t][v.depth[n]:]) {
			mask[t>>6] |= 1 << (t & 63)
		}
	}
	return true
}

// walkBits is walkBulk for a node with nodeBits: the plain tokens a word at a time, less
// those beginning more characters than bt.limit (refused when exact, else checked), then
// the others one by one. It reports false (nothing done) when too many would be checked.
func (c *Compiled) walkBits(n, s int32, bt bulkTake, b *nodeBits, one uint64, mask []uint64) bool {
	v := c.v
	base := v.startsAt[n]
	over := 0
	if bt.limit < v.below[n] && !bt.exact {
		for _, i := range b.long {
			if v.tokStarts[i]-base <= bt.limit {
				break
			}
			if over++; over > maxOneByOne {
				return false
			}
		}
	}
	for i, w := range b.plain {
		mask[i] |= w
	}
	for _, i := range b.long {
		if v.tokStarts[i]-base <= bt.limit {
			break
		}
		t := v.toks[i]
		mask[t>>6] &^= 1 << (t & 63)
		if !bt.exact && c.takes(s, v.pieces[t][v.depth[n]:]) {
			mask[t>>6] |= 1 << (t & 63)
		}
	}
	for _, i := range b.odd {
		t := v.toks[i]
		switch sp := v.tokSpecial[i]; {
		case sp&one != 0:
		case sp&uint64(bt.dead) != 0:
			continue
		case v.tokStarts[i]-base <= bt.limit:
			mask[t>>6] |= 1 << (t & 63)
			continue
		case bt.exact:
			continue
		}
		if c.takes(s, v.pieces[t][v.depth[n]:]) {
			mask[t>>6] |= 1 << (t & 63)
		}
	}
	return true
}

// walk sets the bits of the tokens under trie node n that state s accepts (s has consumed
// the bytes on the path to n), pruning the subtrees where no stack survives.
func (c *Compiled) walk(n, s int32, mask []uint64) {
	v := c.v
	if v.subEnd[n]-n >= bulkMin && c.walkBulk(n, s, mask) {
		return
	}
	st := c.states[s]
	c.burn(int(v.childStart[n+1] - v.childStart[n]))
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
		if ns != c.finalID && v.childStart[ch+1] > v.childStart[ch] { // not a leaf
			c.walk(ch, ns, mask)
		}
	}
}

// bulk reports whether state s takes the tokens below trie node n without walking them,
// and which: when s loops on every byte below n, all of them; when it loops on all but
// control bytes that kill it (dead), those without such a byte; and when instead its
// relaxed state does, surely those that also begin at most limit characters past n, limit
// being the fewest iterations s's counters still allow (see counters.go).
// Non-ASCII bytes never loop (a byte inside a character leads to a state in the middle of
// it), so when the tokens below n are valid UTF-8 from a character boundary, it is enough
// that the state loops on their ASCII bytes and on every whole non-ASCII character. In the
// middle of a character (after a lead byte), the tokens below n first finish it: it is
// enough that every way to finish it leads to one state that passes the test.
func (c *Compiled) bulk(n, s int32) (bulkTake, bool) {
	v := c.v
	if dead, all, _, ok := c.takesAll(n, s, false); ok {
		return bulkTake{limit: v.below[n], dead: dead, all: all}, true
	}
	r, left, ok := c.relaxed(s)
	if !ok || r == s {
		return bulkTake{}, false
	}
	dead, _, fresh, ok := c.takesAll(n, r, true)
	if !ok {
		return bulkTake{}, false
	}
	if fresh { // see loopsTo
		left = min(left, c.states[r].freshMin)
	} else if c.states[s].oneCounter > 0 {
		return bulkTake{limit: left, dead: dead, exact: true}, true
	}
	if left < v.below[n] {
		left = max(left, c.stackLimit(n, s, dead))
	}
	return bulkTake{limit: left, dead: dead}, true
}

// bulkTake says which tokens below a trie node a state takes (see bulk): all of them
// (all), or surely those without the control bytes dead, without " or \, and beginning
// at most limit characters past the node (walkBulk checks the others).
type bulkTake struct {
	limit      int32
	dead       uint32
	all, exact bool // exact: the tokens beginning more than limit are refused
}

// takesAll reports whether s accepts every token below n (all: then every one), or every
// one that has none of the control bytes dead (which s refuses) and no " or \ (which walk
// checks one by one). relaxed compares the states after a byte by their relaxed forms
// (fresh: that was needed).
func (c *Compiled) takesAll(n, s int32, relaxed bool) (dead uint32, all, fresh, ok bool) {
	v := c.v
	bs := v.subBytes[n]
	if ok, fresh := c.loopsTo(s, &bs, relaxed); ok {
		return 0, !relaxed, fresh, true
	}
	bs[0] &^= 1 << '"'
	bs[1] &^= 1 << ('\\' - 64)
	if u := v.utf8At[n]; u != 0 && v.utf8Below[n] {
		if s = c.finishChar(s, u); s < 0 {
			return 0, false, false, false
		}
		if relaxed {
			s = c.relaxedID(s)
		}
	}
	dead = c.deadControls(s) & uint32(bs[0])
	bs[0] &^= uint64(dead)
	if ok, fresh := c.loopsTo(s, &bs, relaxed); ok {
		return dead, false, fresh, true
	}
	if !v.utf8Below[n] {
		return 0, false, false, false
	}
	ascii := byteSet{bs[0], bs[1]}
	if ok, _ := c.loopsTo(s, &ascii, relaxed); ok && c.loopsUTF8(s, relaxed) {
		return dead, false, relaxed && c.states[s].freshMin > 0, true
	}
	// a state that changes with every character but never refuses one (a pattern searched
	// for, before its match) takes every token of plain characters; not tried on the exact
	// form of a state with counters (each count is a new state: bulk tries the relaxed form).
	// The answer costs up to a few thousand steps, so it is sought for big subtrees only;
	// once known (an exact state livePlain met from one above), it serves any subtree.
	if ascii[0]&^plainASCII[0] == 0 && ascii[1]&^plainASCII[1] == 0 &&
		(!relaxed && c.states[s].plain > 0 && c.relaxedID(s) == s ||
			v.subEnd[n]-n >= plainMin && (relaxed || c.relaxedID(s) == s) && c.livePlain(s, relaxed)) {
		return dead, false, relaxed && c.states[s].freshMin > 0, true
	}
	return 0, false, false, false
}

// plainStates bounds the states livePlain explores.
const plainStates = 160

// plainMin is the subtree size from which livePlain is tried (its answer costs up to a
// few thousand steps the first time).
const plainMin = 8192

// plainASCII are the characters a JSON string holds raw: 20–7E but " and \.
var plainASCII = func() byteSet {
	var b byteSet
	b.add(0x20, 0x7e)
	b[0] &^= 1 << '"'
	b[1] &^= 1 << ('\\' - 64)
	return b
}()

// livePlain reports whether no text of plain characters (plainASCII and every non-ASCII
// character, a last one possibly cut short) leads from s to a dead end: the states such
// texts reach, at character boundaries, are explored (at most plainStates; with relaxed, by their
// relaxed forms) and each must take every plain character. The answer is cached in every
// state explored when it is yes.
func (c *Compiled) livePlain(s int32, relaxed bool) bool {
	st := c.states[s]
	k := &st.plain
	if relaxed {
		k = &st.plainR
	}
	if *k != 0 {
		return *k > 0
	}
	seen := []int32{s}
	add := func(y int32) {
		if relaxed && y != s {
			if r := c.relaxedID(y); r != y {
				c.noteFresh(s, y)
				y = r
			}
		}
		if !slices.Contains(seen, y) {
			seen = append(seen, y)
		}
	}
	// ASCII first (a dead end shows up cheaply), then whole characters from every state
	// found, until no new state appears
	ok := true
	for done := 0; ok && done < len(seen); {
		for i := done; i < len(seen) && ok; i++ {
			x := seen[i]
			for w, bits64 := range plainASCII {
				for ; bits64 != 0 && ok; bits64 &= bits64 - 1 {
					y := c.step(x, byte(w*64+bits.TrailingZeros64(bits64)))
					ok = y >= 0
					if ok {
						add(y)
					}
				}
			}
			ok = ok && len(seen) <= plainStates
		}
		n := len(seen)
		for i := done; i < n && ok; i++ {
			for _, seq := range utf8Ranges {
				ends, alive := c.followAll(seen[i], seq)
				if ok = alive; !ok {
					break
				}
				for _, y := range ends {
					add(y)
				}
			}
			ok = ok && len(seen) <= plainStates
		}
		done = n
	}
	if !ok {
		*k = -1
		return false
	}
	for _, x := range seen {
		if relaxed {
			c.states[x].plainR = 1
		} else {
			c.states[x].plain = 1
		}
	}
	return true
}

// followAll is the states the byte strings in the ranges lead to from s, and whether
// every step of every one leads somewhere.
func (c *Compiled) followAll(s int32, seq []byteRange) ([]int32, bool) {
	cur := []int32{s}
	var next []int32
	for _, r := range seq {
		next = next[:0]
		for _, x := range cur {
			for b := int(r.lo); b <= int(r.hi); b++ {
				y := c.step(x, byte(b))
				if y < 0 {
					return nil, false
				}
				if !slices.Contains(next, y) {
					next = append(next, y)
				}
			}
		}
		cur, next = next, cur
	}
	return cur, true
}

// relaxedID is the relaxed state of s (s itself when it holds no counter).
func (c *Compiled) relaxedID(s int32) int32 {
	if r, _, ok := c.relaxed(s); ok {
		return r
	}
	return s
}

// takes reports whether the bytes lead somewhere from s.
func (c *Compiled) takes(s int32, bytes string) bool {
	c.burn(len(bytes))
	for i := 0; i < len(bytes) && s >= 0; i++ {
		s = c.step(s, bytes[i])
	}
	return s >= 0
}

// deadControls are the control bytes (00–1F) after which no stack of s survives (cached
// in the state).
func (c *Compiled) deadControls(s int32) uint32 {
	st := c.states[s]
	if !st.deadKnown {
		for b := byte(0); b < 0x20; b++ {
			if c.step(s, b) < 0 {
				st.dead |= 1 << b
			}
		}
		st.deadKnown = true
	}
	return st.dead
}

// utf8Rest are the byte ranges that finish a character from each UTF-8 decoding state
// (see utf8Next).
var utf8Rest = [8][]byteRange{
	1: {{0x80, 0xBF}},
	2: {{0x80, 0xBF}, {0x80, 0xBF}},
	3: {{0xA0, 0xBF}, {0x80, 0xBF}},
	4: {{0x80, 0x9F}, {0x80, 0xBF}},
	5: {{0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	6: {{0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	7: {{0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
}

// finishChar is the one state every way of finishing the character in decoding state u
// leads to from s (-1: none, or several; cached in the state).
func (c *Compiled) finishChar(s int32, u int8) int32 {
	if d := c.states[s].done[u]; d != 0 {
		return d - 1
	}
	r := c.follow(s, utf8Rest[u])
	c.states[s].done[u] = r + 1
	return r
}

// follow is the one state every byte string in the ranges leads to from s (-1: none, or
// several, or a dead end).
func (c *Compiled) follow(s int32, seq []byteRange) int32 {
	cur := []int32{s}
	var next []int32
	for _, r := range seq {
		next = next[:0]
		for _, x := range cur {
			for b := int(r.lo); b <= int(r.hi); b++ {
				y := c.step(x, byte(b))
				if y < 0 {
					return -1
				}
				if !slices.Contains(next, y) {
					next = append(next, y)
				}
			}
		}
		cur, next = next, cur
	}
	if len(cur) != 1 {
		return -1
	}
	return cur[0]
}

// utf8Ranges are the UTF-8 byte-range sequences of the code points from U+0080 on.
var utf8Ranges = func() [][]byteRange {
	var out [][]byteRange
	rs := normalizeClass(class(false, 0x80, 0x10FFFF))
	for i := 0; i < len(rs); i += 2 {
		out = utf8Sequences(rs[i], rs[i+1], out)
	}
	return out
}()

// loopsUTF8 reports whether every non-ASCII character (every UTF-8 sequence of one) leads
// from state s back to s, every part of it leading somewhere (cached in the state).
// With relaxed, the state after a character is compared by its relaxed form.
func (c *Compiled) loopsUTF8(s int32, relaxed bool) bool {
	st := c.states[s]
	k := &st.utf8
	if relaxed {
		k = &st.utf8R
	}
	if *k != 0 {
		return *k > 0
	}
	ok := c.walkUTF8(s, relaxed)
	*k = -1
	if ok {
		*k = 1
	}
	return ok
}

func (c *Compiled) walkUTF8(s int32, relaxed bool) bool {
	for _, seq := range utf8Ranges {
		t := c.follow(s, seq)
		if t >= 0 && t != s && relaxed {
			if r := c.relaxedID(t); r == s {
				c.noteFresh(s, t)
				t = r
			}
		}
		if t != s {
			return false
		}
	}
	return true
}

// loops reports whether every byte in bs leads from state s back to s (inside a JSON string,
// most bytes do): then every token made of those bytes is allowed and keeps the state.
func (c *Compiled) loops(s int32, bs *byteSet) bool {
	ok, _ := c.loopsTo(s, bs, false)
	return ok
}

// loopsTo is loops, or with relaxed (s a relaxed state) whether every byte leads to a
// state whose relaxed form is s: a byte may start a counted repetition afresh (a word
// after a space), whose exact counter the relaxed form drops; fresh reports that one
// did, and then a token is safe in bulk only if it takes no more iterations than such a
// counter allows (the state's freshMin), which bulk enforces.
func (c *Compiled) loopsTo(s int32, bs *byteSet, relaxed bool) (ok, fresh bool) {
	st := c.states[s]
	if st.final {
		return false, false
	}
	yes, no := &st.loopYes, &st.loopNo
	if relaxed {
		yes, no = &st.rloopYes, &st.rloopNo
	}
	var missing byteSet
	for w := range bs {
		if bs[w]&no[w] != 0 {
			return false, false
		}
		missing[w] = bs[w] &^ yes[w]
	}
	for w, x := range missing {
		for ; x != 0; x &= x - 1 {
			b := byte(w*64 + bits.TrailingZeros64(x))
			t := c.step(s, b)
			if relaxed && t >= 0 && t != s {
				if r := c.relaxedID(t); r == s {
					c.noteFresh(s, t)
					t = r
				}
			}
			if t != s {
				no.add(b, b)
				return false, false
			}
			yes.add(b, b)
		}
	}
	return true, relaxed && c.states[s].freshMin > 0
}

// noteFresh records in state s the fewest iterations allowed by the exact counters of t,
// a state s leads to and whose relaxed form is s (counted repetitions t entered afresh).
func (c *Compiled) noteFresh(s, t int32) {
	st := c.states[s]
	if st.freshMin == 0 {
		st.freshMin = c.satur
	}
	for _, id := range c.states[t].set {
		for f := id; f != 0 && c.nodes[f].counted; f = c.nodes[f].parent {
			n := c.nodes[f]
			if e := c.p.elems[n.pos]; e.kind == kCount && n.cnt >= 0 {
				st.freshMin = min(st.freshMin, c.leftOf(&c.p.counts[e.arg], n.cnt))
			}
		}
	}
}
