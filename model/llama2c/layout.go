package llama2c

import (
	"fmt"
	"iter"
)

// array is one float32 array of the file: one layer's tensor of a kind (the
// file groups each kind across layers, layer by layer), or a skipped one.
type array struct {
	name  string
	dims  []int // ggml order
	elems int64
	skip  bool // freq_cis: read past, not returned
}

// layout yields the arrays of a checkpoint in file order, lazily, so that
// nothing is allocated for arrays the file turns out not to hold. Header
// fields are at most maxField = 2^24 and an array's count is a product of
// at most two of them, so it fits int64.
func layout(c Config) iter.Seq[array] {
	head := c.HeadDim()
	qDim, kvDim := c.NumHeads*head, c.NumKVHeads*head
	mk := func(name string, dims ...int) array {
		n := int64(1)
		for _, d := range dims {
			n *= int64(d)
		}
		return array{name: name, dims: dims, elems: n}
	}
	perLayer := []struct {
		suffix string
		dims   [2]int // ggml order; dims[1] == 0 for a vector
	}{
		{"attn_norm.weight", [2]int{c.Dim}},
		{"attn_q.weight", [2]int{c.Dim, qDim}},
		{"attn_k.weight", [2]int{c.Dim, kvDim}},
		{"attn_v.weight", [2]int{c.Dim, kvDim}},
		{"attn_output.weight", [2]int{qDim, c.Dim}},
		{"ffn_norm.weight", [2]int{c.Dim}},
		{"ffn_gate.weight", [2]int{c.Dim, c.HiddenDim}}, // w1
		{"ffn_down.weight", [2]int{c.HiddenDim, c.Dim}}, // w2
		{"ffn_up.weight", [2]int{c.Dim, c.HiddenDim}},   // w3
	}
	return func(yield func(array) bool) {
		if !yield(mk("token_embd.weight", c.Dim, c.VocabSize)) {
			return
		}
		for _, kind := range perLayer {
			for l := range c.NumLayers {
				dims := []int{kind.dims[0]}
				if kind.dims[1] != 0 {
					dims = append(dims, kind.dims[1])
				}
				if !yield(mk(fmt.Sprintf("blk.%d.%s", l, kind.suffix), dims...)) {
					return
				}
			}
		}
		if !yield(mk("output_norm.weight", c.Dim)) {
			return
		}
		for _, name := range []string{"freq_cis_real", "freq_cis_imag"} {
			freq := mk(name, head/2, c.SeqLen)
			freq.skip = true
			if !yield(freq) {
				return
			}
		}
		if !c.SharedClassifier {
			yield(mk("output.weight", c.Dim, c.VocabSize))
		}
	}
}
