package bucket

import "fmt"

// MaxTiles returns the largest number of query tiles (tileSize tokens each,
// per sequence) that numSeqs sequences sharing numQueryTokens tokens can
// need, over every split of the tokens (a sequence may get none):
//
//	max Σ⌈mᵢ/tileSize⌉ over m₁+…+m_N = M, mᵢ ≥ 0
//	  = k + ⌊(M − k)/tileSize⌋,  k = min(N, M)
//
// reached by WorstCaseSplit: k−1 sequences with one token, the last with the
// rest. (With k sequences non-empty, each ⌈mᵢ/t⌉ = 1 + ⌊(mᵢ−1)/t⌋ and the sum
// of floors is at most ⌊(M−k)/t⌋; that bound grows with k.) A plan captured
// with fewer tiles silently drops work when the split changes (seed 003:
// 160 tokens as [160, 0] launched 13 blocks, as [80, 80] they need 14).
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

// WorstCaseSplit returns the per-sequence query lengths that need the most
// tiles: min(numSeqs, numQueryTokens) sequences, all but the last with one
// token, the last with the rest. Warm-up builds its dummy step from it.
func WorstCaseSplit(numSeqs, numQueryTokens int) []int {
	k := min(numSeqs, numQueryTokens)
	if k <= 0 {
		return nil
	}
	lens := make([]int, k)
	for i := range lens {
		lens[i] = 1
	}
	lens[k-1] = numQueryTokens - (k - 1)
	return lens
}

// Tiles returns Σ⌈lens[i]/tileSize⌉, the query tiles of one split.
func Tiles(lens []int, tileSize int) int {
	n := 0
	for _, m := range lens {
		n += ceilDiv(m, tileSize)
	}
	return n
}
