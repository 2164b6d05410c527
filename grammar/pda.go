package grammar

// stackNode is one frame of a parse stack, interned in a Compiled: pos is where parsing
// continues (a kTerm elem when the frame is a top; a continuation after a call otherwise),
// parent the frame below (0: the bottom). set is the byte set of pos when it is a kTerm.
type stackNode struct {
	pos, parent, set int32
}

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
			out = c.expand(n.pos+1, n.parent, out)
		}
	}
	return out
}

// expand appends the stacks reached from "continue at pos, then return to parent" by calling
// rules and returning from finished alternatives until each top is a byte set (or the stack
// is empty: id 0). A call whose return would only end its caller's alternative is a tail call
// and pushes no frame, so repetitions do not grow the stack. Expansion terminates because no
// rule is left-recursive.
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
