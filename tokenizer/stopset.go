package tokenizer

import "slices"

// StopSet is the Aho-Corasick automaton of a list of stop strings, built once per request and
// shared by its sequences' matchers. Immutable after NewStopSet.
//
// Node 0 is the root (the empty prefix). Every node is a prefix of some stop string; depth is
// its length in bytes. fail is the node of the longest proper suffix of the node's prefix that
// is also a prefix of a stop string. out is the stop string that ends at the node or at a node
// on its fail chain — the longest one (-1 when none).
//
//	stops "he", "she", "hers":   root ─h─ 1 ─e─ 2(out he) ─r─ 3 ─s─ 4(out hers)
//	                             root ─s─ 5 ─h─ 6 ─e─ 7(out she; fail → 2)
type StopSet struct {
	stops []string
	nodes []stopNode
}

type stopNode struct {
	edges []stopEdge // sorted by byte
	fail  int32
	out   int32 // index in stops, or -1
	depth int32
}

type stopEdge struct {
	b    byte
	node int32
}

// NewStopSet builds the automaton of stops; empty strings are ignored. It costs time and
// memory linear in the total length of the stop strings.
func NewStopSet(stops []string) *StopSet {
	s := &StopSet{stops: stops, nodes: []stopNode{{out: -1}}}
	for i, stop := range stops {
		if stop == "" {
			continue
		}
		n := int32(0)
		for j := 0; j < len(stop); j++ {
			n = s.child(n, stop[j])
		}
		if o := s.nodes[n].out; o < 0 {
			s.nodes[n].out = int32(i) // the first of equal stop strings
		}
	}
	s.link()
	return s
}

// child returns the child of n on b, adding it if missing.
func (s *StopSet) child(n int32, b byte) int32 {
	edges := s.nodes[n].edges
	k, found := slices.BinarySearchFunc(edges, b, func(e stopEdge, b byte) int { return int(e.b) - int(b) })
	if found {
		return edges[k].node
	}
	c := int32(len(s.nodes))
	s.nodes = append(s.nodes, stopNode{out: -1, depth: s.nodes[n].depth + 1})
	s.nodes[n].edges = slices.Insert(edges, k, stopEdge{b, c})
	return c
}

// goTo returns the child of n on b, or -1.
func (s *StopSet) goTo(n int32, b byte) int32 {
	edges := s.nodes[n].edges
	k, found := slices.BinarySearchFunc(edges, b, func(e stopEdge, b byte) int { return int(e.b) - int(b) })
	if !found {
		return -1
	}
	return edges[k].node
}

// link sets the fail and out links breadth first (a node's fail node is shallower, so it is
// final when the node is reached).
func (s *StopSet) link() {
	queue := []int32{0}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range s.nodes[n].edges {
			c := e.node
			f := int32(0)
			if n != 0 {
				f = s.next(s.nodes[n].fail, e.b)
			}
			s.nodes[c].fail = f
			if s.nodes[c].out < 0 {
				s.nodes[c].out = s.nodes[f].out // a shorter stop string ending here
			}
			queue = append(queue, c)
		}
	}
}

// next is the automaton's transition: the node of the longest suffix of (n's prefix + b) that
// is a prefix of a stop string.
func (s *StopSet) next(n int32, b byte) int32 {
	for {
		if c := s.goTo(n, b); c >= 0 {
			return c
		}
		if n == 0 {
			return 0
		}
		n = s.nodes[n].fail
	}
}
