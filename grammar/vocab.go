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
	below    []int32 // per node: the most bytes a token below it has past the node
	maxLen   int     // the longest piece, in bytes

	// utf8At is the UTF-8 decoding state after a node's path (see utf8Next; -1: not
	// valid UTF-8); utf8Below whether every token below the node continues it validly
	// (a last character may be cut short).
	utf8At    []int8
	utf8Below []bool

	// starts counts, per token, the bytes of its piece that begin a character (all but
	// 80–BF); startsAt the same for a node's path: a token below n begins
	// starts[t]-startsAt[n] characters past n.
	starts   []int32
	startsAt []int32

	// special is per token a mask of the bytes that end or escape a JSON string or break
	// it: bit b for a control byte b (00–1F), bit 32 for ", bit 33 for \.
	special []uint64
	depth   []int16  // per node: the length of its path
	pathCtl []uint32 // per node: the control bytes of its path (bit b for byte b)

	// tokSpecial and tokStarts are special and starts in the order of toks (the masks
	// of big subtrees read them in sequence).
	tokSpecial []uint64
	tokStarts  []int32

	// bits holds, for the nodes with at least bitsMin tokens below, the mask of those
	// tokens whose pieces are plain (no special byte) and the positions in toks of the
	// others: a mask takes a big subtree a word at a time.
	bits map[int32]*nodeBits
}

// bitsMin is the subtree size (tokens) from which a node keeps nodeBits.
const bitsMin = 4096

type nodeBits struct {
	plain []uint64
	odd   []int32
	long  []int32 // the positions of the plain tokens, the most characters first
}

const (
	specialQuote     = 1 << 32
	specialBackslash = 1 << 33
)

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
			v.maxLen = max(v.maxLen, len(p))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(v.pieces[a], v.pieces[b]) })
	v.childStart = []int32{0}
	v.tokStart = []int32{0}
	v.starts = make([]int32, len(v.pieces))
	v.special = make([]uint64, len(v.pieces))
	for id, p := range v.pieces {
		for i := 0; i < len(p); i++ {
			switch b := p[i]; {
			case b < 0x20:
				v.special[id] |= 1 << b
			case b == '"':
				v.special[id] |= specialQuote
			case b == '\\':
				v.special[id] |= specialBackslash
			}
			if p[i] < 0x80 || p[i] > 0xBF {
				v.starts[id]++
			}
		}
	}
	v.build(ids, 0, 0, 0, 0)
	v.summarize()
	v.tokSpecial = make([]uint64, len(v.toks))
	v.tokStarts = make([]int32, len(v.toks))
	for i, t := range v.toks {
		v.tokSpecial[i], v.tokStarts[i] = v.special[t], v.starts[t]
	}
	v.bits = map[int32]*nodeBits{}
	for n := range v.subEnd {
		lo, hi := v.tokStart[n+1], v.tokStart[v.subEnd[n]]
		if hi-lo < bitsMin {
			continue
		}
		b := &nodeBits{plain: make([]uint64, (len(v.pieces)+63)/64)}
		for i := lo; i < hi; i++ {
			if t := v.toks[i]; v.tokSpecial[i] == 0 {
				b.plain[t>>6] |= 1 << (t & 63)
				b.long = append(b.long, i)
			} else {
				b.odd = append(b.odd, i)
			}
		}
		slices.SortStableFunc(b.long, func(x, y int32) int { return int(v.tokStarts[y] - v.tokStarts[x]) })
		v.bits[int32(n)] = b
	}
	return v
}

// summarize fills subEnd and subBytes, children (higher ids) before parents.
func (v *Vocab) summarize() {
	n := len(v.childStart) - 1
	v.subEnd = make([]int32, n)
	v.subBytes = make([]byteSet, n)
	v.below = make([]int32, n)
	v.utf8Below = make([]bool, n)
	for i := n - 1; i >= 0; i-- {
		lo, hi := v.childStart[i], v.childStart[i+1]
		v.subEnd[i] = int32(i + 1)
		v.utf8Below[i] = true
		for e := lo; e < hi; e++ {
			ch := v.edgeNode[e]
			v.subBytes[i].add(v.edgeByte[e], v.edgeByte[e])
			v.subBytes[i].or(&v.subBytes[ch])
			v.subEnd[i] = v.subEnd[ch]
			v.below[i] = max(v.below[i], 1+v.below[ch])
			v.utf8Below[i] = v.utf8Below[i] && v.utf8At[ch] >= 0 && v.utf8Below[ch]
		}
	}
}

// Size is the number of token ids (the mask covers ids 0..Size()-1).
func (v *Vocab) Size() int { return len(v.pieces) }

// build makes the next trie node (nodes are numbered in the order built: preorder) from ids,
// sorted by piece, whose pieces share their first depth bytes: the tokens ending at the node,
// then one edge per next byte, then the children.
func (v *Vocab) build(ids []int32, depth int, u int8, starts int32, ctl uint32) {
	v.pathCtl = append(v.pathCtl, ctl)
	v.utf8At = append(v.utf8At, u)
	v.startsAt = append(v.startsAt, starts)
	v.depth = append(v.depth, int16(min(depth, 1<<15-1)))
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
		b := v.edgeByte[first+gi]
		ctlb := ctl
		if b < 0x20 {
			ctlb |= 1 << b
		}
		v.build(g, depth+1, utf8Next(u, b), starts+int32(b2i(b < 0x80 || b > 0xBF)), ctlb)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// utf8Next is the UTF-8 decoding state after byte b from state u: 0 between characters;
// 1, 2, 5 with 1, 2, 3 continuation bytes (80–BF) to come; 3, 4 with 2 to come, the next in
// A0–BF (after E0) or 80–9F (after ED); 6, 7 with 3 to come, the next in 90–BF (after F0)
// or 80–8F (after F4); -1 invalid (also from -1).
func utf8Next(u int8, b byte) int8 {
	cont := b >= 0x80 && b <= 0xBF
	switch u {
	case 0:
		switch {
		case b < 0x80:
			return 0
		case b >= 0xC2 && b <= 0xDF:
			return 1
		case b == 0xE0:
			return 3
		case b == 0xED:
			return 4
		case b >= 0xE1 && b <= 0xEF:
			return 2
		case b == 0xF0:
			return 6
		case b >= 0xF1 && b <= 0xF3:
			return 5
		case b == 0xF4:
			return 7
		}
	case 1:
		if cont {
			return 0
		}
	case 2:
		if cont {
			return 1
		}
	case 3:
		if b >= 0xA0 && b <= 0xBF {
			return 1
		}
	case 4:
		if b >= 0x80 && b <= 0x9F {
			return 1
		}
	case 5:
		if cont {
			return 2
		}
	case 6:
		if b >= 0x90 && b <= 0xBF {
			return 2
		}
	case 7:
		if b >= 0x80 && b <= 0x8F {
			return 2
		}
	}
	return -1
}
