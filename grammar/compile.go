package grammar

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// maxElems bounds the size of a compiled grammar.
const maxElems = 1 << 22

type elemKind uint8

const (
	kEnd   elemKind = iota // end of an alternative: return to the caller
	kTerm                  // one byte in sets[arg]
	kRef                   // call rule arg
	kCount                 // repeat counts[arg].unit counts[arg].min..max times, then go on
)

// countThreshold: a repetition whose bounds exceed it compiles to a counted repetition
// (kCount) instead of one rule per count, so that {1,100000} costs one rule and its
// states share masks (see Compiled.abstract).
const countThreshold = 8

// maxCount bounds the counts of a repetition.
const maxCount = 1 << 30

// countSpec is a counted repetition: the rule repeated, its bounds (max < 0: none), and
// whether the rule is one character (a class, or JSON's string character).
type countSpec struct {
	unit     int32
	min, max int32
	oneChar  bool
}

type elem struct {
	kind elemKind
	arg  int32
}

// program is a grammar compiled to byte level: each rule is a list of alternatives, each a
// run of elems in elems ending with kEnd. Code point classes became alternatives of UTF-8
// byte sequences, small repetitions became auxiliary rules (right-recursive, so that tail
// calls keep stacks flat), large ones counted repetitions of a rule that cannot match the
// empty string. No rule is left-recursive (checked), so expansion terminates.
type program struct {
	elems  []elem
	alts   [][]int32 // per rule: the start positions of its alternatives
	names  []string  // per rule
	sets   []byteSet
	counts []countSpec
	root   int32
}

type compiler struct {
	p        *program
	m        *meter
	ruleIdx  map[string]int32
	setIdx   map[byteSet]int32
	classIdx map[string]int32
	rawClass map[string]elem // a class as written (neg, then its ranges' bytes) → its elem
	owner    string
	classKey []byte
	aux      int
	visits   int // nodes emitted (a shared node each time)
	err      error
}

func compileRules(rules []rule, m *meter) (*program, error) {
	p, _, err := compileRulesCount(rules, m)
	return p, err
}

// compileRulesCount is compileRules, also counting the expression nodes it emitted (a node
// the rules share, each time).
func compileRulesCount(rules []rule, m *meter) (*program, int, error) {
	c := &compiler{p: &program{}, m: m, ruleIdx: map[string]int32{}, setIdx: map[byteSet]int32{}, classIdx: map[string]int32{}, rawClass: map[string]elem{}}
	for _, r := range rules {
		c.ruleIdx[r.name] = c.newRule(r.name)
	}
	root, ok := c.ruleIdx["root"]
	if !ok {
		return nil, 0, fmt.Errorf("grammar: no rule named root")
	}
	c.p.root = root
	for _, r := range rules {
		c.owner = r.name
		idx := c.ruleIdx[r.name]
		if r.body.kind == nAlt {
			for _, k := range r.body.kids {
				c.addAlt(idx, c.emit(k, nil))
			}
		} else {
			c.addAlt(idx, c.emit(r.body, nil))
		}
		if c.err != nil {
			return nil, 0, c.err
		}
	}
	m.charge(3 * len(c.p.elems)) // the two checks below are linear
	if err := c.p.checkLeftRecursion(); err != nil {
		return nil, 0, err
	}
	if err := c.p.prune(); err != nil {
		return nil, 0, err
	}
	return c.p, c.visits + len(rules), nil
}

func (c *compiler) newRule(name string) int32 {
	if len(c.p.alts) >= MaxRules {
		panic(&LimitError{Limit: "grammar rules", Value: MaxRules})
	}
	c.p.alts = append(c.p.alts, nil)
	c.p.names = append(c.p.names, name)
	return int32(len(c.p.alts) - 1)
}

func (c *compiler) newAux() int32 {
	c.aux++
	return c.newRule(c.owner + "_" + strconv.Itoa(c.aux))
}

func (c *compiler) addAlt(r int32, body []elem) {
	if len(c.p.elems)+len(body) >= maxElems {
		if c.err == nil {
			c.err = fmt.Errorf("grammar: too large (over %d elements)", maxElems)
		}
		return
	}
	c.m.charge(len(body) + 1)
	c.p.alts[r] = append(c.p.alts[r], int32(len(c.p.elems)))
	c.p.elems = append(c.p.elems, body...)
	c.p.elems = append(c.p.elems, elem{kind: kEnd})
}

func (c *compiler) term(s byteSet) elem {
	i, ok := c.setIdx[s]
	if !ok {
		i = int32(len(c.p.sets))
		c.p.sets = append(c.p.sets, s)
		c.setIdx[s] = i
	}
	return elem{kind: kTerm, arg: i}
}

// emit appends the elems of n to out.
func (c *compiler) emit(n *node, out []elem) []elem {
	c.m.charge(1)
	c.visits++
	switch n.kind {
	case nLit:
		for i := 0; i < len(n.s); i++ {
			var s byteSet
			s.add(n.s[i], n.s[i])
			out = append(out, c.term(s))
		}
	case nClass:
		out = append(out, c.class(n))
	case nRef:
		i, ok := c.ruleIdx[n.s]
		if !ok && c.err == nil {
			c.err = fmt.Errorf("grammar: rule %q refers to undefined rule %q", c.owner, n.s)
		}
		out = append(out, elem{kind: kRef, arg: i})
	case nSeq:
		for _, k := range n.kids {
			out = c.emit(k, out)
		}
	case nAlt:
		r := c.newAux()
		for _, k := range n.kids {
			c.addAlt(r, c.emit(k, nil))
		}
		out = append(out, elem{kind: kRef, arg: r})
	case nRep:
		out = c.repeat(n, out)
	}
	return out
}

// repeat emits x{min,max}: within countThreshold, min copies, then x* as R ::= x R | ε, or
// up to max-min more as nested optionals O_k ::= x O_{k-1} | ε (unambiguous, and tail
// calls keep stacks flat); beyond it, one counted repetition of x's rule.
func (c *compiler) repeat(n *node, out []elem) []elem {
	body := c.emit(n.kids[0], nil)
	if len(body) == 0 {
		return out
	}
	unit := body[0]
	if len(body) > 1 || unit.kind == kTerm && (n.min > countThreshold || n.max > countThreshold) {
		r := c.newAux()
		c.addAlt(r, body)
		unit = elem{kind: kRef, arg: r}
	}
	if n.min > countThreshold || n.max > countThreshold {
		x := n.kids[0]
		oneChar := x.kind == nClass || x.kind == nRef && x.s == "char"
		c.p.counts = append(c.p.counts, countSpec{unit: unit.arg, min: int32(n.min), max: int32(n.max), oneChar: oneChar})
		return append(out, elem{kind: kCount, arg: int32(len(c.p.counts) - 1)})
	}
	for i := 0; i < n.min; i++ {
		out = append(out, unit)
	}
	if n.max < 0 {
		r := c.newAux()
		c.addAlt(r, []elem{unit, {kind: kRef, arg: r}})
		c.addAlt(r, nil)
		return append(out, elem{kind: kRef, arg: r})
	}
	prev := int32(-1)
	for k := n.min; k < n.max; k++ {
		r := c.newAux()
		a := []elem{unit}
		if prev >= 0 {
			a = append(a, elem{kind: kRef, arg: prev})
		}
		c.addAlt(r, a)
		c.addAlt(r, nil)
		prev = r
	}
	if prev >= 0 {
		out = append(out, elem{kind: kRef, arg: prev})
	}
	return out
}

// class emits a code point class: one byte set when it is ASCII only, else a call of a rule
// whose alternatives are the ASCII byte set and a call of the rule of the class's
// multi-byte code points (their UTF-8 byte sequences), which classes with the same
// non-ASCII part share. A class written as one before is its elem (schemas repeat a few
// classes many times).
func (c *compiler) class(n *node) elem {
	key := c.classKey[:0]
	if n.neg {
		key = append(key, 1)
	} else {
		key = append(key, 0)
	}
	key = append(key, setKey(n.ranges)...)
	c.classKey = key
	if e, ok := c.rawClass[string(key)]; ok {
		return e
	}
	e := c.newClass(n)
	c.rawClass[string(key)] = e
	return e
}

// newClass is class for a class not met before.
func (c *compiler) newClass(n *node) elem {
	rs := normalizeClass(n)
	var ascii byteSet
	var multi []rune
	for i := 0; i < len(rs); i += 2 {
		lo, hi := rs[i], rs[i+1]
		if lo < 0x80 {
			ascii.add(byte(lo), byte(min(hi, 0x7f)))
			lo = 0x80
		}
		if lo <= hi {
			multi = append(multi, lo, hi)
		}
	}
	if len(multi) == 0 {
		return c.term(ascii)
	}
	m := c.multiByte(multi)
	if ascii.empty() {
		return elem{kind: kRef, arg: m}
	}
	key := string(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(
		[]byte{':'}, ascii[0]), ascii[1]), uint32(m)))
	if r, ok := c.classIdx[key]; ok {
		return elem{kind: kRef, arg: r}
	}
	r := c.newRule("class_" + strings.ReplaceAll(c.owner, " ", ""))
	c.classIdx[key] = r
	c.addAlt(r, []elem{c.term(ascii)})
	c.addAlt(r, []elem{{kind: kRef, arg: m}})
	return elem{kind: kRef, arg: r}
}

// multiByte is the rule of the code points in the ranges (all ≥ 0x80): one alternative per
// UTF-8 byte-range sequence.
func (c *compiler) multiByte(rs []rune) int32 {
	key := string(append([]byte{','}, setKey(rs)...))
	if r, ok := c.classIdx[key]; ok {
		return r
	}
	r := c.newRule("utf8_" + strings.ReplaceAll(c.owner, " ", ""))
	c.classIdx[key] = r
	var seqs [][]byteRange
	for i := 0; i < len(rs); i += 2 {
		seqs = utf8Sequences(rs[i], rs[i+1], seqs)
	}
	for _, s := range seqs {
		a := make([]elem, len(s))
		for i, br := range s {
			var bs byteSet
			bs.add(br.lo, br.hi)
			a[i] = c.term(bs)
		}
		c.addAlt(r, a)
	}
	return r
}
