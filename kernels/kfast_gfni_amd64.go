//go:build amd64 && !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"pagoda/gguf"
)

// kfastGEMM512 returns the AVX-512 fast kernels of typ (Q5_K; those of
// kfastTiles512): with gfni the ones that move the quants' high bits by
// VGF2P8AFFINEQB (GFNI with AVX-512: Ice Lake, Zen 4 and later) where that
// measured faster (Q5_K, one token; _asm/kfast_gfni.go), otherwise the
// ones that shift and mask them. Both compute the same bits.
func kfastGEMM512(typ gguf.Type, gfni bool) *blockGEMM {
	k := kfastTiles512[typ]
	tiles := k.tiles
	if gfni {
		tiles = k.gfni
	}
	return &blockGEMM{fast: k.fast, tiles: tiles}
}

// kfastTiles512 are the K-quants' AVX-512 fast tiles that have GFNI
// variants, with the type's fast traits: the shift-and-mask tiles, and
// the tiles used with GFNI.
var kfastTiles512 = map[gguf.Type]struct {
	fast        *fastTraits
	tiles, gfni []gemmFunc
}{
	gguf.Q5_K: {&fastQ5K, []gemmFunc{kfastQ5_K_1, kfastQ5_K_2, kfastQ5_K_3, kfastQ5_K_4},
		[]gemmFunc{kfastQ5_K_gfni_1, kfastQ5_K_2, kfastQ5_K_3, kfastQ5_K_4}},
}

// hasGFNI reports GFNI with its EVEX (AVX-512) forms.
func hasGFNI() bool { return cpu.X86.HasAVX512GFNI }
