package bucket

import "fmt"

// MaxTiles returns the largest number of query tiles (tileSize tokens each,
// per sequence) that numSeqs sequences sharing numQueryTokens tokens can
// need, over every split of the tokens (a sequence may get none):
//
//	max Σ⌈mᵢ/tileSize⌉ over m₁+…+m_N = M, mᵢ ≥ 0
//	  = k + ⌊(M − k)/tileSize⌋,  k = min(N, M)
//
// reached when k−1 sequences have one token and the last has the rest.
// (With k sequences non-empty, each ⌈mᵢ/t⌉ = 1 + ⌊(mᵢ−1)/t⌋ and the sum of
// floors is at most ⌊(M−k)/t⌋; that bound grows with k.) A plan captured
// with fewer tiles silently drops work when the split changes: FastDeploy
// captured its prefill graphs for 160 tokens as [160, 0], 13 attention
// blocks, and two 80-token prompts, [80, 80], needed 14 (the last request
// decoded garbage) until it sized the capture for this worst split.
//
// It panics when tileSize < 1 or a count is negative.
func MaxTiles(numSeqs, numQueryTokens, tileSize int) int {
	if tileSize < 1 || numSeqs < 0 || numQueryTokens < 0 {
		panic(fmt.Sprintf("bucket.MaxTiles(%d, %d, %d): need counts ≥ 0 and tileSize ≥ 1",
			numSeqs, numQueryTokens, tileSize))
	}
	k := min(numSeqs, numQueryTokens)
	return k + (numQueryTokens-k)/tileSize
}
