package bucket

import (
	"fmt"
	"slices"
	"testing"
)

// splits calls f with every way to give m tokens to n sequences (each ≥ 0).
func splits(n, m int, f func([]int)) {
	lens := make([]int, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == n-1 {
			lens[i] = left
			f(lens)
			return
		}
		for v := 0; v <= left; v++ {
			lens[i] = v
			rec(i+1, left-v)
		}
	}
	if n == 0 {
		if m == 0 {
			f(lens)
		}
		return
	}
	rec(0, m)
}

// TestMaxTilesBruteForce enumerates every split of M tokens among N
// sequences and checks that MaxTiles is the largest tile count and that
// worstCaseSplit reaches it.
func TestMaxTilesBruteForce(t *testing.T) {
	for n := 1; n <= 5; n++ {
		for tile := 1; tile <= 5; tile++ {
			t.Run(fmt.Sprintf("N=%d/tile=%d", n, tile), func(t *testing.T) {
				for m := 0; m <= 12; m++ {
					best := 0
					splits(n, m, func(lens []int) { best = max(best, tiles(lens, tile)) })
					if got := MaxTiles(n, m, tile); got != best {
						t.Errorf("MaxTiles(%d, %d, %d) = %d, brute force %d", n, m, tile, got, best)
					}
					w := worstCaseSplit(n, m)
					sum := 0
					for _, v := range w {
						sum += v
					}
					if len(w) > n || sum != m || tiles(w, tile) != best {
						t.Errorf("worstCaseSplit(%d, %d) = %v: %d tiles, want %d tokens in ≤ %d seqs and %d tiles",
							n, m, w, tiles(w, tile), m, n, best)
					}
				}
			})
		}
	}
}

func TestMaxTiles(t *testing.T) {
	tests := []struct {
		n, m, tile, want int
		split            []int
	}{
		// 160 tokens, 2 sequences, tiles of 64: [160, 0] needs 3 tiles,
		// [80, 80] 4, [1, 159] 1 + 3 = 4.
		{2, 160, 64, 4, []int{1, 159}},
		{1, 160, 64, 3, []int{160}},
		{8, 3, 16, 3, []int{1, 1, 1}}, // fewer tokens than sequences
		{64, 512, 32, 64 + 448/32, nil},
		{0, 0, 16, 0, nil},
		{4, 0, 16, 0, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d seqs %d tokens tile %d", tt.n, tt.m, tt.tile), func(t *testing.T) {
			if got := MaxTiles(tt.n, tt.m, tt.tile); got != tt.want {
				t.Errorf("MaxTiles = %d, want %d", got, tt.want)
			}
			if tt.split != nil && !slices.Equal(worstCaseSplit(tt.n, tt.m), tt.split) {
				t.Errorf("worstCaseSplit = %v, want %v", worstCaseSplit(tt.n, tt.m), tt.split)
			}
		})
	}
	if got := tiles([]int{160, 0}, 64); got != 3 {
		t.Errorf("tiles([160 0], 64) = %d, want 3", got)
	}
	if got := tiles([]int{80, 80}, 64); got != 4 {
		t.Errorf("tiles([80 80], 64) = %d, want 4", got)
	}
}

func TestMaxTilesPanics(t *testing.T) {
	tests := []struct{ n, m, tile int }{{1, 1, 0}, {-1, 1, 1}, {1, -1, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("MaxTiles(%d, %d, %d) did not panic", tt.n, tt.m, tt.tile)
				}
			}()
			MaxTiles(tt.n, tt.m, tt.tile)
		})
	}
}

// worstCaseSplit returns the per-sequence query lengths that need the most
// tiles: min(numSeqs, numQueryTokens) sequences, all but the last with one
// token, the last with the rest (the split MaxTiles's count is reached by).
func worstCaseSplit(numSeqs, numQueryTokens int) []int {
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

// tiles returns Σ⌈lens[i]/tileSize⌉, the query tiles of one split.
func tiles(lens []int, tileSize int) int {
	n := 0
	for _, m := range lens {
		n += ceilDiv(m, tileSize)
	}
	return n
}
