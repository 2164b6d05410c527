package grammar

import (
	"slices"
	"strings"
)

// Vocab is a tokenizer's vocabulary for masking, built once per model: the byte pieces of the
// tokens in a trie (children of a node in CSR form: edges childStart[n]..childStart[n+1]),
// and the end-of-generation ids. Immutable after NewVocab; safe for concurrent use.
type Vocab struct {
	pieces []string
	isEOG  []bool
	eog    []int32

	childStart []int32 // per trie node, len nodes+1
	edgeByte   []byte
	edgeNode   []int32
	tokStart   []int32 // per trie node, len nodes+1: the tokens whose piece ends at the node
	toks       []int32

	// Nodes are numbered in preorder, so the descendants of n are the nodes n+1..subEnd[n]-1
	// and their tokens toks[tokStart[n+1]:tokStart[subEnd[n]]]; subBytes[n] is the set of bytes
	// on the edges below n.
	subEnd   []int32
	subBytes []byteSet
}

// NewVocab builds the vocabulary: pieces[id] is the bytes token id decodes to; "" means the
// token is never allowed (special or control tokens, unused ids). eog are the
// end-of-generation ids (out-of-range ids are ignored): allowed exactly when the grammar can
// end, whatever their piece.
func NewVocab(pieces []string, eog []int32) *Vocab {
	v := &Vocab{pieces: slices.Clone(pieces), isEOG: make([]bool, len(pieces))}
	for _, id := range eog {
		if id >= 0 && int(id) < len(pieces) && !v.isEOG[id] {
			v.isEOG[id] = true
			v.eog = append(v.eog, id)
		}
	}
	var ids []int32
	for id, p := range v.pieces {
		if p != "" && !v.isEOG[id] {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(v.pieces[a], v.pieces[b]) })
	v.childStart = []int32{0}
	v.tokStart = []int32{0}
	v.build(ids, 0)
	v.summarize()
	return v
}

// summarize fills subEnd and subBytes, children (higher ids) before parents.
func (v *Vocab) summarize() {
	n := len(v.childStart) - 1
	v.subEnd = make([]int32, n)
	v.subBytes = make([]byteSet, n)
	for i := n - 1; i >= 0; i-- {
		lo, hi := v.childStart[i], v.childStart[i+1]
		v.subEnd[i] = int32(i + 1)
		for e := lo; e < hi; e++ {
			ch := v.edgeNode[e]
			v.subBytes[i].add(v.edgeByte[e], v.edgeByte[e])
			v.subBytes[i].or(&v.subBytes[ch])
			v.subEnd[i] = v.subEnd[ch]
		}
	}
}

// Size is the number of token ids (the mask covers ids 0..Size()-1).
func (v *Vocab) Size() int { return len(v.pieces) }

// build makes the next trie node (nodes are numbered in the order built: preorder) from ids,
// sorted by piece, whose pieces share their first depth bytes: the tokens ending at the node,
// then one edge per next byte, then the children.
func (v *Vocab) build(ids []int32, depth int) {
	i := 0
	for i < len(ids) && len(v.pieces[ids[i]]) == depth {
		i++
	}
	v.toks = append(v.toks, ids[:i]...)
	v.tokStart = append(v.tokStart, int32(len(v.toks)))
	var groups [][]int32
	for j := i; j < len(ids); {
		b := v.pieces[ids[j]][depth]
		k := j
		for k < len(ids) && v.pieces[ids[k]][depth] == b {
			k++
		}
		groups = append(groups, ids[j:k])
		v.edgeByte = append(v.edgeByte, b)
		v.edgeNode = append(v.edgeNode, 0)
		j = k
	}
	v.childStart = append(v.childStart, int32(len(v.edgeByte)))
	first := len(v.edgeNode) - len(groups)
	for gi, g := range groups {
		child := int32(len(v.childStart) - 1)
		v.edgeNode[first+gi] = child
		v.build(g, depth+1)
	}
}
