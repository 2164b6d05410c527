package grammar

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// rxDFA is a deterministic automaton over code points, for the string constraints that a
// grammar of one regular expression cannot express: the intersection of several patterns
// (pattern with format, allOf of patterns), complements (not, oneOf, property names other
// than the declared ones), and anchors inside a pattern. State 0 is the start; edges are
// sorted, disjoint code point ranges; a missing range leads nowhere (reject).
type rxDFA struct {
	states []rxState
}

type rxState struct {
	edges  []rxEdge
	accept bool
}

type rxEdge struct {
	lo, hi rune
	to     int32
}

// maxDFAStates bounds an automaton (subset construction and products can blow up).
const maxDFAStates = 4000

var errDFATooLarge = fmt.Errorf("the regular expressions need an automaton of more than %d states", maxDFAStates)

// dfaOf is the automaton of the strings t matches whole (anchors ^ and $ at the ends of
// the string).
func dfaOf(t *syntax.Regexp) (*rxDFA, error) {
	if size := rxSize(t); size > 20000 {
		return nil, errDFATooLarge
	}
	prog, err := syntax.Compile(unfold(t).Simplify())
	if err != nil {
		return nil, err
	}
	b := &dfaBuilder{prog: prog, index: map[string]int32{}}
	start, err := b.closure([]uint32{uint32(prog.Start)}, true)
	if err != nil {
		return nil, err
	}
	if _, err := b.state(start, true); err != nil {
		return nil, err
	}
	for i := 0; i < len(b.sets); i++ {
		if err := b.fill(int32(i)); err != nil {
			return nil, err
		}
	}
	return &rxDFA{states: b.states}, nil
}

// rxSize estimates the size of t once counted repetitions are expanded.
func rxSize(t *syntax.Regexp) int {
	n := 1
	for _, s := range t.Sub {
		n += rxSize(s)
	}
	if t.Op == syntax.OpRepeat {
		m := t.Max
		if m < 0 {
			m = t.Min + 1
		}
		n *= max(m, 1)
	}
	return min(n, 1<<30)
}

// unfold replaces case-folded literals by classes, so that the program's runes are
// explicit.
func unfold(t *syntax.Regexp) *syntax.Regexp {
	if t.Op == syntax.OpLiteral && t.Flags&syntax.FoldCase != 0 {
		subs := make([]*syntax.Regexp, len(t.Rune))
		for i, r := range t.Rune {
			rs := []rune{r, r}
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				rs = append(rs, f, f)
			}
			subs[i] = &syntax.Regexp{Op: syntax.OpCharClass, Rune: rs}
		}
		if len(subs) == 1 {
			return subs[0]
		}
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	}
	cp := *t
	cp.Sub = make([]*syntax.Regexp, len(t.Sub))
	for i, s := range t.Sub {
		cp.Sub[i] = unfold(s)
	}
	return &cp
}

type dfaBuilder struct {
	prog   *syntax.Prog
	sets   [][]uint32
	index  map[string]int32
	states []rxState
}

// closure follows the empty moves from pcs; it keeps the instructions that consume a
// rune, the match, and end-of-text assertions (which match only at the end).
func (b *dfaBuilder) closure(pcs []uint32, atStart bool) ([]uint32, error) {
	seen := map[uint32]bool{}
	var out []uint32
	var visit func(pc uint32) error
	visit = func(pc uint32) error {
		if seen[pc] {
			return nil
		}
		seen[pc] = true
		in := &b.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			if err := visit(in.Out); err != nil {
				return err
			}
			return visit(in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			return visit(in.Out)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			if op&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0 {
				return fmt.Errorf(`word boundaries \b \B are not supported`)
			}
			if op&(syntax.EmptyBeginText|syntax.EmptyBeginLine) != 0 && !atStart {
				return nil
			}
			if op&(syntax.EmptyEndText|syntax.EmptyEndLine) != 0 {
				out = append(out, pc)
				return nil
			}
			return visit(in.Out)
		case syntax.InstFail:
			return nil
		}
		out = append(out, pc)
		return nil
	}
	for _, pc := range pcs {
		if err := visit(pc); err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return out, nil
}

// acceptsAtEnd reports whether pc leads to the match with no input left (atStart: and
// none consumed).
func (b *dfaBuilder) acceptsAtEnd(pc uint32, atStart bool, depth int) bool {
	in := &b.prog.Inst[pc]
	if depth > 1000 {
		return false
	}
	switch in.Op {
	case syntax.InstMatch:
		return true
	case syntax.InstAlt, syntax.InstAltMatch:
		return b.acceptsAtEnd(in.Out, atStart, depth+1) || b.acceptsAtEnd(in.Arg, atStart, depth+1)
	case syntax.InstEmptyWidth:
		if syntax.EmptyOp(in.Arg)&(syntax.EmptyBeginText|syntax.EmptyBeginLine) != 0 && !atStart {
			return false
		}
		return b.acceptsAtEnd(in.Out, atStart, depth+1)
	case syntax.InstCapture, syntax.InstNop:
		return b.acceptsAtEnd(in.Out, atStart, depth+1)
	}
	return false
}

func (b *dfaBuilder) state(set []uint32, atStart bool) (int32, error) {
	key := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(set))), 4*len(set))
	if id, ok := b.index[string(key)]; ok {
		return id, nil
	}
	if len(b.sets) >= maxDFAStates {
		return 0, errDFATooLarge
	}
	id := int32(len(b.sets))
	b.index[string(key)] = id
	b.sets = append(b.sets, set)
	acc := false
	for _, pc := range set {
		acc = acc || b.acceptsAtEnd(pc, atStart, 0)
	}
	b.states = append(b.states, rxState{accept: acc})
	return id, nil
}

// ranges are the code point ranges an instruction consumes.
func instRanges(in *syntax.Inst) []rune {
	switch in.Op {
	case syntax.InstRune1:
		return []rune{in.Rune[0], in.Rune[0]}
	case syntax.InstRune:
		if len(in.Rune) == 1 {
			return []rune{in.Rune[0], in.Rune[0]}
		}
		return in.Rune
	case syntax.InstRuneAny:
		return []rune{0, utf8.MaxRune}
	case syntax.InstRuneAnyNotNL:
		return []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
	}
	return nil
}

// fill computes the edges of state id: the state's ranges split at every boundary, each
// piece leading to the closure of the instructions that consume it.
func (b *dfaBuilder) fill(id int32) error {
	set := b.sets[id]
	var cuts []rune
	for _, pc := range set {
		rs := instRanges(&b.prog.Inst[pc])
		for i := 0; i+1 < len(rs); i += 2 {
			cuts = append(cuts, rs[i], rs[i+1]+1)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var edges []rxEdge
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]-1
		var next []uint32
		for _, pc := range set {
			in := &b.prog.Inst[pc]
			if rs := instRanges(in); rs != nil && in.MatchRune(lo) {
				next = append(next, in.Out)
			}
		}
		if len(next) == 0 {
			continue
		}
		cl, err := b.closure(next, false)
		if err != nil {
			return err
		}
		if len(cl) == 0 {
			continue
		}
		to, err := b.state(cl, false)
		if err != nil {
			return err
		}
		if k := len(edges) - 1; k >= 0 && edges[k].to == to && edges[k].hi+1 == lo {
			edges[k].hi = hi
		} else {
			edges = append(edges, rxEdge{lo, hi, to})
		}
	}
	b.states[id].edges = edges
	return nil
}

// complement is the automaton of the strings a refuses.
func (a *rxDFA) complement() *rxDFA {
	n := int32(len(a.states))
	out := &rxDFA{states: make([]rxState, n+1)}
	for i, s := range a.states {
		var edges []rxEdge
		next := rune(0)
		for _, e := range s.edges {
			if e.lo > next {
				edges = append(edges, rxEdge{next, e.lo - 1, n})
			}
			edges = append(edges, e)
			next = e.hi + 1
		}
		if next <= utf8.MaxRune {
			edges = append(edges, rxEdge{next, utf8.MaxRune, n})
		}
		out.states[i] = rxState{edges: edges, accept: !s.accept}
	}
	out.states[n] = rxState{edges: []rxEdge{{0, utf8.MaxRune, n}}, accept: true}
	return out
}

// and is the automaton of the strings both a and b accept.
func (a *rxDFA) and(b *rxDFA) (*rxDFA, error) {
	type pair struct{ x, y int32 }
	index := map[pair]int32{{0, 0}: 0}
	queue := []pair{{0, 0}}
	out := &rxDFA{}
	for i := 0; i < len(queue); i++ {
		p := queue[i]
		sa, sb := &a.states[p.x], &b.states[p.y]
		st := rxState{accept: sa.accept && sb.accept}
		j := 0
		for _, ea := range sa.edges {
			for j < len(sb.edges) && sb.edges[j].hi < ea.lo {
				j++
			}
			for k := j; k < len(sb.edges) && sb.edges[k].lo <= ea.hi; k++ {
				eb := sb.edges[k]
				q := pair{ea.to, eb.to}
				to, ok := index[q]
				if !ok {
					if len(queue) >= maxDFAStates {
						return nil, errDFATooLarge
					}
					to = int32(len(queue))
					index[q] = to
					queue = append(queue, q)
				}
				st.edges = append(st.edges, rxEdge{max(ea.lo, eb.lo), min(ea.hi, eb.hi), to})
			}
		}
		out.states = append(out.states, st)
	}
	return out, nil
}

// live reports, per state, whether an accepting state can be reached from it.
func (a *rxDFA) live() []bool {
	live := make([]bool, len(a.states))
	for changed := true; changed; {
		changed = false
		for i, s := range a.states {
			if live[i] {
				continue
			}
			if s.accept || slices.ContainsFunc(s.edges, func(e rxEdge) bool { return live[e.to] }) {
				live[i], changed = true, true
			}
		}
	}
	return live
}

// empty reports whether a accepts no string.
func (a *rxDFA) empty() bool { return !a.live()[0] }

// universal reports whether state i accepts, loops to itself on every code point, and
// has no other edge (every continuation is accepted).
func (a *rxDFA) universal(i int32) bool {
	s := a.states[i]
	return s.accept && len(s.edges) == 1 && s.edges[0].lo == 0 && s.edges[0].hi == utf8.MaxRune && s.edges[0].to == i
}

// literalsDFA is the automaton of exactly the given strings.
func literalsDFA(words []string) (*rxDFA, error) {
	if len(words) == 0 {
		return &rxDFA{states: []rxState{{}}}, nil
	}
	if len(words) == 1 {
		return dfaOf(&syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(words[0])})
	}
	subs := make([]*syntax.Regexp, len(words))
	for i, w := range words {
		subs[i] = &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(w)}
		if w == "" {
			subs[i] = &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
	}
	return dfaOf(&syntax.Regexp{Op: syntax.OpAlternate, Sub: subs})
}

// minimize merges the states that accept the same strings (Moore's partition refinement):
// a search pattern's states after its match become one state that accepts everything.
func (a *rxDFA) minimize() *rxDFA {
	live := a.live()
	class := make([]int32, len(a.states))
	for i, s := range a.states {
		switch {
		case !live[i]:
			class[i] = -1
		case s.accept:
			class[i] = 1
		}
	}
	sigs := map[string]int32{}
	for {
		clear(sigs)
		next := make([]int32, len(a.states))
		// a state's signature: its class, then per edge to a live state either the
		// extension of the edge before (same class, adjacent: 0, hi) or 1, class, lo, hi
		var b []int32
		for i, s := range a.states {
			if class[i] < 0 {
				next[i] = -1
				continue
			}
			b = append(b[:0], class[i])
			lastTo, lastHi := int32(-2), rune(-2)
			for _, e := range s.edges {
				to := class[e.to]
				if to < 0 {
					continue
				}
				if to == lastTo && e.lo == lastHi+1 {
					lastHi = e.hi
					b = append(b, 0, e.hi)
					continue
				}
				b = append(b, 1, to, e.lo, e.hi)
				lastTo, lastHi = to, e.hi
			}
			k := setKey(b)
			id, ok := sigs[string(k)]
			if !ok {
				id = int32(len(sigs))
				sigs[string(k)] = id
			}
			next[i] = id
		}
		same := true
		for i := range class {
			if (class[i] < 0) != (next[i] < 0) {
				same = false
			}
		}
		if same && len(sigs) == countClasses(class) {
			break
		}
		class = next
	}
	// one state per class, the start's class first
	order := map[int32]int32{}
	var reps []int
	visit := func(i int) {
		if _, ok := order[class[i]]; !ok && class[i] >= 0 {
			order[class[i]] = int32(len(reps))
			reps = append(reps, i)
		}
	}
	visit(0)
	for i := range a.states {
		visit(i)
	}
	if len(reps) == 0 {
		return &rxDFA{states: []rxState{{}}}
	}
	out := &rxDFA{states: make([]rxState, len(reps))}
	for k, i := range reps {
		s := a.states[i]
		st := rxState{accept: s.accept}
		for _, e := range s.edges {
			if class[e.to] < 0 {
				continue
			}
			to := order[class[e.to]]
			if n := len(st.edges) - 1; n >= 0 && st.edges[n].to == to && st.edges[n].hi+1 == e.lo {
				st.edges[n].hi = e.hi
				continue
			}
			st.edges = append(st.edges, rxEdge{e.lo, e.hi, to})
		}
		out.states[k] = st
	}
	return out
}

func countClasses(class []int32) int {
	seen := make([]bool, len(class)+2) // classes are below the states' count, or 0 and 1
	n := 0
	for _, c := range class {
		if c >= 0 && !seen[c] {
			seen[c] = true
			n++
		}
	}
	return n
}
