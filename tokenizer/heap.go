package tokenizer

import (
	"iter"
	"unicode/utf8"
)

// minHeap is a binary heap ordered by less (the least element on top). It backs the merge
// queues of both BPE variants, which makes merging O(n log n) in the word length instead of
// the O(n²) of rescanning the word after every merge.
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *minHeap[T]) len() int { return len(h.items) }

func (h *minHeap[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *minHeap[T]) pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < last && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

// symbol is a run of bytes [start, end) of the word being merged, in a doubly linked list of
// live symbols (prev/next are indices, -1 at the ends; a merged-away symbol has start == end).
type symbol struct {
	start, end int
	prev, next int
	id         int32 // BPE: the token the symbol's text is, or NoToken
}

// newSymbols splits s into one symbol per UTF-8 character (an invalid byte is one symbol).
func newSymbols(s string, dst []symbol) []symbol {
	dst = dst[:0]
	for i := 0; i < len(s); {
		w := utf8Len(s, i)
		dst = append(dst, symbol{start: i, end: i + w, prev: len(dst) - 1, next: len(dst) + 1, id: NoToken})
		i += w
	}
	if len(dst) > 0 {
		dst[len(dst)-1].next = -1
	}
	return dst
}

// join merges symbol right into its left neighbour left (the caller has
// checked they are adjacent and both live) and unlinks right, which becomes
// empty; it returns the merged symbol's new neighbours (-1 at either end).
func join(syms []symbol, left, right int) (prev, next int) {
	l, r := &syms[left], &syms[right]
	l.end = r.end
	r.start = r.end
	l.next = r.next
	if r.next >= 0 {
		syms[r.next].prev = left
	}
	return l.prev, l.next
}

// linked yields the symbols still linked from the first one, in order: what
// is left after merging.
func linked(syms []symbol) iter.Seq[symbol] {
	return func(yield func(symbol) bool) {
		for i := 0; i >= 0 && len(syms) > 0; i = syms[i].next {
			if !yield(syms[i]) {
				return
			}
		}
	}
}

// utf8Len is the length of the valid UTF-8 character at s[i], or 1 for an invalid byte.
func utf8Len(s string, i int) int {
	_, w := utf8.DecodeRuneInString(s[i:])
	return w
}
