//go:build amd64 && !noasm

package kernels

// swigluOAIAVX is swigluOAIGeneric: the generated kernel (_asm/moe.go) on
// whole blocks of 8 elements, the generic code on a block with an
// argument of expf's special cases and on the tail.
func swigluOAIAVX(dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n], up[:n]
	for i := 0; i < n; {
		i += swigluOAIAVX512(&dst[i], &gate[i], &up[i], n-i)
		j := min(i+8, n)
		swigluOAIGeneric(dst[i:j], gate[i:j], up[i:j])
		i = j
	}
}
