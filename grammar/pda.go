package grammar

// stackNode is one frame of a parse stack, interned in a Compiled: pos is where parsing
// continues (a kTerm elem when the frame is a top; a continuation after a call otherwise),
// parent the frame below (0: the bottom). set is the byte set of pos when it is a kTerm.
// When pos is a kCount elem, cnt is its counter: the iterations done (≥ 0, exact), or an
// abstract counter (< 0, see Compiled.abstract). counted reports whether the frame or one
// below it holds an exact counter, anyCount whether one holds a counter of either kind.
type stackNode struct {
	pos, parent, set, cnt int32
	counted, anyCount     bool
}

// frameKey identifies a frame for interning.
type frameKey struct{ pos, parent, cnt int32 }

// advance appends to out the stacks after byte b from the stacks set (deduplicated, unsorted).
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
			out = c.expand(n.pos+1, n.parent, 0, out)
		}
	}
	return out
}

// expand appends the stacks reached from "continue at pos (with counter cnt if pos is a
// kCount), then return to parent" by calling rules and returning from finished
// alternatives until each top is a byte set (or the stack is empty: id 0). A call whose
// return would only end its caller's alternative is a tail call and pushes no frame, so
// repetitions do not grow the stack. A counted repetition iterates (pushing its frame with
// the next count) while its counter allows, and goes on past it once its minimum is met.
// Expansion terminates because no rule is left-recursive and a counted unit cannot match
// the empty string.
func (c *Compiled) expand(pos, parent, cnt int32, out []int32) []int32 {
	for {
		c.burn(1)
		e := c.p.elems[pos]
		switch e.kind {
		case kEnd:
			if parent == 0 {
				return c.add(0, out)
			}
			f := c.nodes[parent]
			pos, parent, cnt = f.pos, f.parent, f.cnt
		case kTerm:
			if c.p.sets[e.arg].empty() {
				return out
			}
			return c.add(c.frame(pos, parent, 0), out)
		case kRef:
			ret := parent
			if c.p.elems[pos+1].kind != kEnd {
				ret = c.frame(pos+1, parent, 0)
			}
			for _, a := range c.p.alts[e.arg] {
				out = c.expand(a, ret, 0, out)
			}
			return out
		case kCount:
			cs := &c.p.counts[e.arg]
			iterate, exit, next := c.countStep(cs, cnt)
			if iterate {
				ret := c.frame(pos, parent, next)
				for _, a := range c.p.alts[cs.unit] {
					out = c.expand(a, ret, 0, out)
				}
			}
			if !exit {
				return out
			}
			pos, cnt = pos+1, 0
		}
	}
}

// countStep reads a counter: whether the repetition may iterate again, whether it may
// stop, and the counter of the next iteration. An exact counter counts up; an abstract
// one holds how many iterations are still needed and still allowed, saturated at
// c.satur ("that many or more"), and saturated values stay.
func (c *Compiled) countStep(cs *countSpec, cnt int32) (iterate, exit bool, next int32) {
	if cnt >= 0 {
		return cs.max < 0 || cnt < cs.max, cnt >= cs.min, cnt + 1
	}
	need, left := c.decodeCount(cnt)
	dec := func(v int32) int32 {
		if v == c.satur {
			return v
		}
		return max(v-1, 0)
	}
	return left > 0, need == 0, c.encodeCount(dec(need), dec(left))
}

// encodeCount is the abstract counter of need (iterations still needed) and left (still
// allowed), each at most c.satur.
func (c *Compiled) encodeCount(need, left int32) int32 {
	return -1 - (need*(c.satur+1) + left)
}

func (c *Compiled) decodeCount(cnt int32) (need, left int32) {
	x := -1 - cnt
	return x / (c.satur + 1), x % (c.satur + 1)
}

func (c *Compiled) add(id int32, out []int32) []int32 {
	if c.mark[id] == c.gen {
		return out
	}
	c.mark[id] = c.gen
	return append(out, id)
}

// frame interns the frame (pos, parent, cnt): frames without a counter (nearly all) in a
// map keyed by one integer, the others in a second map.
func (c *Compiled) frame(pos, parent, cnt int32) int32 {
	c.burn(4) // a map access
	k64 := uint64(pos)<<32 | uint64(uint32(parent))
	if cnt == 0 {
		if id, ok := c.intern[k64]; ok {
			return id
		}
	} else if id, ok := c.internCnt[frameKey{pos, parent, cnt}]; ok {
		return id
	}
	id := int32(len(c.nodes))
	set := int32(-1)
	e := c.p.elems[pos]
	if e.kind == kTerm {
		set = e.arg
	}
	pn := &c.nodes[parent]
	counted := pn.counted || e.kind == kCount && cnt >= 0
	anyCount := pn.anyCount || e.kind == kCount
	c.nodes = append(c.nodes, stackNode{pos: pos, parent: parent, set: set, cnt: cnt, counted: counted, anyCount: anyCount})
	c.mark = append(c.mark, 0)
	if cnt == 0 {
		c.intern[k64] = id
	} else {
		c.internCnt[frameKey{pos, parent, cnt}] = id
	}
	return id
}
