package grammar

import (
	"math/bits"
	"slices"
)

// Counted repetitions (kCount) keep an exact counter in their stack frame while a matcher
// runs. For masks, two refinements keep the cache small and the walks short:
//
//   - abstract: a counter is reduced to what the next token can observe (how many more
//     iterations are needed and allowed, saturated at c.satur), so a string of maxLength
//     100000 has a few hundred mask states, not 100000;
//   - relax: a counted state does not loop on a byte (its counter moves), which would
//     deny the walk its shortcut of taking a whole subtree at once; but when the relaxed
//     state (every counter made unbounded, and unable to stop where it still needs
//     iterations) loops on every byte of a subtree, and every counter allows at least as
//     many more iterations as the subtree's tokens have bytes left, then every token of
//     the subtree is accepted from the counted state too.

// abstract is the frame id with every exact counter in its stack replaced by its abstract
// counter. Two stacks that differ only in counts whose difference no token can reach (a
// token has at most c.satur-2 bytes, and each iteration takes at least one) get the same
// abstract stack, so they share a state and its mask: a string of maxLength 100000 has a
// few hundred distinct masks, not 100000.
func (c *Compiled) abstract(id int32) int32 {
	n := c.nodes[id]
	if !n.counted {
		return id
	}
	for len(c.abs) < len(c.nodes) {
		c.abs = append(c.abs, -1)
	}
	if a := c.abs[id]; a >= 0 {
		return a
	}
	parent := c.abstract(n.parent)
	cnt := n.cnt
	if e := c.p.elems[n.pos]; e.kind == kCount && cnt >= 0 {
		cs := c.p.counts[e.arg]
		need := min(max(cs.min-cnt, 0), c.satur)
		left := c.satur
		if cs.max >= 0 {
			left = min(cs.max-cnt, c.satur)
		}
		cnt = c.encodeCount(need, left)
	}
	a := c.frame(n.pos, parent, cnt)
	for len(c.abs) < len(c.nodes) {
		c.abs = append(c.abs, -1)
	}
	c.abs[id] = a
	return a
}

// relaxFrame is the frame id with every counter (exact or abstract) in its stack made
// unbounded above, and unable to stop while it still needed iterations.
func (c *Compiled) relaxFrame(id int32) int32 {
	n := c.nodes[id]
	if !n.anyCount {
		return id
	}
	for len(c.relax) < len(c.nodes) {
		c.relax = append(c.relax, -1)
	}
	if r := c.relax[id]; r >= 0 {
		return r
	}
	parent := c.relaxFrame(n.parent)
	cnt := n.cnt
	if e := c.p.elems[n.pos]; e.kind == kCount {
		need := c.needOf(&c.p.counts[e.arg], cnt)
		if need > 0 {
			need = c.satur
		}
		cnt = c.encodeCount(need, c.satur)
	}
	r := c.frame(n.pos, parent, cnt)
	for len(c.relax) < len(c.nodes) {
		c.relax = append(c.relax, -1)
	}
	c.relax[id] = r
	return r
}

// takesPlain reports whether the top of stack id takes a plain character's first byte
// (20–7E but " and \, or a non-ASCII byte).
func (c *Compiled) takesPlain(id int32) bool {
	bs := &c.p.sets[c.nodes[id].set]
	return bs[0]&plainASCII[0] != 0 || bs[1]&plainASCII[1] != 0 || bs[2] != 0 || bs[3] != 0
}

// needOf and leftOf are the iterations a counter still needs and still allows (left
// c.satur: that many or more).
func (c *Compiled) needOf(cs *countSpec, cnt int32) int32 {
	if cnt < 0 {
		need, _ := c.decodeCount(cnt)
		return need
	}
	return max(cs.min-cnt, 0)
}

func (c *Compiled) leftOf(cs *countSpec, cnt int32) int32 {
	if cnt < 0 {
		_, left := c.decodeCount(cnt)
		return left
	}
	if cs.max < 0 {
		return c.satur
	}
	return min(cs.max-cnt, c.satur)
}

// relaxed is the state of s's relaxed stacks and the fewest iterations any of s's
// counters still allows (cached in the state; ok false: s has no counter). It also
// records in the state whether every stack of s holds one counter, the same frame, of a
// repetition of one character, but stacks that take no plain character (oneCounter):
// then a token of plain characters that begins more characters than that counter allows
// is refused, not merely unproven.
func (c *Compiled) relaxed(s int32) (r, minLeft int32, ok bool) {
	st := c.states[s]
	if st.relaxed == 0 {
		st.relaxed = -1
		st.minLeft = c.satur
		st.oneCounter = 0
		var set []int32
		for _, id := range st.set {
			if !c.nodes[id].anyCount {
				set = append(set, id)
				if id != 0 && c.takesPlain(id) { // a stack outside the counter that goes on
					st.oneCounter = -1
				}
				continue
			}
			st.relaxed = 1
			set = append(set, c.relaxFrame(id))
			var frame int32
			top := c.nodes[id]
			for f := id; f != 0; f = c.nodes[f].parent {
				if e := c.p.elems[c.nodes[f].pos]; e.kind == kCount {
					cs := &c.p.counts[e.arg]
					left := c.leftOf(cs, c.nodes[f].cnt)
					// the iteration the top is in was counted when it began (see expand):
					// when the top begins it, the next character is still that iteration
					start, mid := f == top.parent && c.beginsUnit(cs.unit, top), c.midChar(top)
					if start && left < c.satur {
						left++
					}
					st.minLeft = min(st.minLeft, left)
					switch {
					case frame != 0 || !cs.oneChar || !start && !mid || st.oneCounter != 0 && st.oneCounter != f:
						st.oneCounter = -1
					default:
						frame = f
					}
				}
			}
			if st.oneCounter == 0 {
				st.oneCounter = frame
			}
		}
		if st.relaxed > 0 {
			slices.Sort(set)
			set = slices.Compact(set)
			rs := c.stateOf(set)
			c.states[s].relaxed = rs + 1 // c.states may have grown: st is still the same pointer
		}
	}
	if st.relaxed < 0 {
		return 0, 0, false
	}
	return st.relaxed - 1, st.minLeft, true
}

// beginsUnit reports whether top, a top frame whose parent is a counted repetition of
// unit, is at the start of an iteration: its position is the first element of an
// alternative of unit or of a rule an alternative of unit calls as a tail call (no frame
// between), reached at the start, and it takes no UTF-8 continuation byte.
func (c *Compiled) beginsUnit(unit int32, top stackNode) bool {
	if c.p.sets[top.set][2] != 0 { // a continuation byte (80–BF)
		return false
	}
	if c.unitStarts == nil {
		c.unitStarts = map[int32][]int32{}
	}
	starts, ok := c.unitStarts[unit]
	if !ok {
		seen := map[int32]bool{unit: true}
		todo := []int32{unit}
		for len(todo) > 0 {
			r := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, a := range c.p.alts[r] {
				switch e := c.p.elems[a]; {
				case e.kind == kTerm:
					starts = append(starts, a)
				case e.kind == kRef && c.p.elems[a+1].kind == kEnd && !seen[e.arg]:
					seen[e.arg] = true
					todo = append(todo, e.arg)
				}
			}
		}
		c.unitStarts[unit] = starts
	}
	return slices.Contains(starts, top.pos)
}

// midChar reports whether top takes only UTF-8 continuation bytes (80–BF, the third word
// of a byteSet): it is inside a character, whose rest begins no new one.
func (c *Compiled) midChar(top stackNode) bool {
	bs := &c.p.sets[top.set]
	return bs[0]|bs[1]|bs[3] == 0 && bs[2] != 0
}

// stackBulk is one stack of a state, for stackLimit: its relaxed frame, the state of that
// frame alone, and the fewest iterations the stack's counters allow.
type stackBulk struct {
	frame, single, left int32
}

// stackLimit refines bulk's limit for the tokens below n, which s's relaxed state takes
// up to the fewest iterations any counter of s allows: a stack of s that survives, as
// itself up to its counters, every ASCII byte below n but the control bytes dead (which
// refuse a token) and " and \ (whose tokens are checked one by one) accepts by itself
// every token that begins at most as many characters past n as its counters allow (and
// as the counters it enters afresh allow). The limit is the most such a stack allows (0:
// none qualifies). The local part of an e-mail address is four alternatives of one to
// four dot-separated atoms: the one-atom alternative allows 64 characters where the
// four-atom one allows 16.
func (c *Compiled) stackLimit(n, s int32, dead uint32) int32 {
	v := c.v
	bs := v.subBytes[n]
	bs[0] &^= uint64(dead) | 1<<'"'
	bs[1] &^= 1 << ('\\' - 64)
	if v.utf8At[n] != 0 || bs[2]|bs[3] != 0 {
		return 0
	}
	st := c.states[s]
	if st.stacks == nil {
		st.stacks = []stackBulk{}
		for _, id := range st.set {
			if id == 0 {
				continue
			}
			left := c.satur
			for f := id; f != 0; f = c.nodes[f].parent {
				if e := c.p.elems[c.nodes[f].pos]; e.kind == kCount {
					left = min(left, c.leftOf(&c.p.counts[e.arg], c.nodes[f].cnt))
				}
			}
			rf := c.relaxFrame(id)
			st.stacks = append(st.stacks, stackBulk{rf, c.stateOf([]int32{rf}), left})
		}
		c.cacheBytes += 12 * len(st.stacks)
	}
	best := int32(0)
	for _, x := range st.stacks {
		if x.left > best {
			if fresh, ok := c.keeps(x, &bs); ok {
				best = max(best, min(x.left, fresh))
			}
		}
	}
	return best
}

// keeps reports whether every byte of bs leads x's relaxed frame to a stack whose relaxed
// form is that frame, and the fewest iterations allowed by the counters such a stack
// entered afresh (c.satur: none). The answers are cached in x's single state.
func (c *Compiled) keeps(x stackBulk, bs *byteSet) (fresh int32, ok bool) {
	st := c.states[x.single]
	if st.keepFresh == 0 {
		st.keepFresh = c.satur
	}
	for w := range bs {
		if bs[w]&st.keepNo[w] != 0 {
			return 0, false
		}
		for m := bs[w] &^ st.keepYes[w]; m != 0; m &= m - 1 {
			b := byte(w*64 + bits.TrailingZeros64(m))
			f, ok := c.keepsByte(x, b)
			if !ok {
				st.keepNo.add(b, b)
				return 0, false
			}
			st.keepYes.add(b, b)
			st.keepFresh = min(st.keepFresh, f)
		}
	}
	return st.keepFresh, true
}

// keepsByte is keeps for one byte: the stacks b leads x's frame to, by their relaxed
// forms; a stack that entered counters afresh holds them exact (the relaxed frame's own
// counters are abstract).
func (c *Compiled) keepsByte(x stackBulk, b byte) (fresh int32, ok bool) {
	t := c.step(x.single, b)
	if t < 0 {
		return 0, false
	}
	fresh = c.satur
	for _, y := range c.states[t].set {
		if y == 0 || c.relaxFrame(y) != x.frame {
			continue
		}
		f := c.satur
		for g := y; g != 0 && c.nodes[g].counted; g = c.nodes[g].parent {
			n := c.nodes[g]
			if e := c.p.elems[n.pos]; e.kind == kCount && n.cnt >= 0 {
				f = min(f, c.leftOf(&c.p.counts[e.arg], n.cnt))
			}
		}
		if !ok || f > fresh {
			fresh, ok = f, true
		}
	}
	return fresh, ok
}
