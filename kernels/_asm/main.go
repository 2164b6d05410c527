// Command _asm generates the amd64 assembly of package kernels (its AVX-512
// and AVX2 kernels) with avo; the kernels package doc maps each family to
// the types and ISAs it serves.
//
// Each kernel family is written to its own file pair:
//
//	go run . -kernel gemm32 -pkg kernels -out ../gemm32_amd64.s -stubs ../gemm32_stubs_amd64.go
//
// `go generate` in package kernels (or `make asm`) runs every family; the test
// in this module regenerates them into a temporary directory and fails if the
// committed files differ.
//
// Every kernel reproduces the generic Go reference bit for bit: integer dot
// products are exact in any order, and every float operation is done in the
// reference's order and precision (see the kernels package doc); the
// reference's fma32 is an IEEE fused multiply-add, as VFMADD computes it.
package main

import (
	"flag"
	"fmt"
	"os"

	. "github.com/mmcloughlin/avo/build"
)

// families maps a -kernel name to the function that emits its kernels.
var families = map[string]func(){
	"gemm32":     genGemm32,
	"gemm32avx2": genGemm32AVX2,
	"gemmk":      genGemmK,
	"vec":        genVec,
	"ceil":       genCeil,
	"quant":      genQuant,
	"attn":       genAttn,
	"gemm5":      genGemm5,
	"kq23":       genKQ23,
	"gemmf":      genGemmF,
	"vecavx2":    genVecAVX2,
	"quantavx2":  genQuantAVX2,
	"rope":       genRope,
	"gemmr":      genGemmR,
	"gemmq":      genGemmQ,
	"gemmqavx2":  genGemmQAVX2,
	"attnavx2":   genAttnAVX2,
	"kfast":      genKFast,
	"kfastavx2":  genKFastAVX2,
	"tiled":      genTiled,
	"tiledavx2":  genTiledAVX2,
	"prefetch":   genPrefetch,
	"mxfp4":      genMXFP4,
	"moe":        genMoE,
}

func main() {
	kernel := flag.String("kernel", "", "kernel family to generate")
	flag.Parse()
	gen, ok := families[*kernel]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown -kernel %q\n", *kernel)
		os.Exit(2)
	}
	ConstraintExpr("amd64,!noasm")
	gen()
	Generate()
}
