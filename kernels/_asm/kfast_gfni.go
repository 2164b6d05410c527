package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GFNI bit moves of the fast K-quant kernels (kfast.high): one
// VGF2P8AFFINEQB applies an 8×8 bit matrix to every byte, so it moves any
// bits of a byte anywhere in it and clears the others, where a shift in
// 16-bit words needs a byte mask after it. For every byte x, bit i of the
// result is the parity of x & (byte 7−i of the matrix), XOR bit i of the
// immediate (0 here). Q5_K's and Q6_K's quants then take their high bits
// in two instructions (VGF2P8AFFINEQB of qh, VPTERNLOGD) instead of four.
//
// Only Q5_K's one-token kernel uses it. On Zen 4 VGF2P8AFFINEQB seems to
// compete with VPDPBUSD for the pipes, so it pays only where VPDPBUSD is
// not the limit. BenchmarkKFastGFNICompute (one core, weights in L2, GB/s
// of weights, GFNI vs shifts; "low": only the low nibbles' high bits by
// GFNI):
//
//	      Q4_K (hi nibble)  Q5_K both   Q5_K low    Q6_K both   Q6_K low
//	n1    76 vs 80          70 vs 59    66 vs 59    71 vs 62    69 vs 62
//	n2    44 vs 53          46 vs 47    50 vs 47    52 vs 52    55 vs 52
//	n3    30 vs 34          33 vs 38    36 vs 38    38 vs 43    42 vs 43
//	n4    24 vs 27          24 vs 29    27 vs 29    30 vs 35    33 vs 35
//
// Streaming from memory (BenchmarkDecodeKQuant, two threads, % of the
// read bandwidth at ~30 GB/s) the one-token Q5_K kernel gains 4–6 points
// in every build measured; Q4_K's loses 6–9 points; Q6_K's measured
// anywhere from 4 points slower to 3 faster from one build of the test
// binary to another (the same kernels; the shift-and-mask one stayed put),
// 1 slower in the last; the two-token kernels ("low") were not faster
// (Q5_K 0–1 point slower, Q6_K 0–1 faster). Q6_K's layout has since been
// repacked (its one-token kernel at 85 GB/s); moving its part-0 top bits
// by GFNI there measured 84 vs 83. kfGFNI lists the GFNI kernels by type
// and width (from 1); the others keep the shift-and-mask kernels.
var kfGFNI = map[string][]gfMode{
	"Q5_K": {gfBoth},
}

// gfMode is which quants of a kernel take their high bits by
// VGF2P8AFFINEQB.
type gfMode int

const (
	gfNone gfMode = iota
	gfLow         // those of the low nibbles (the high ones by shifts)
	gfBoth
)

// gfBits is the matrix that moves n bits of each byte, from bit from on,
// to bit to on, clearing the other bits.
func gfBits(from, to, n int) uint64 {
	var m uint64
	for i := range n {
		m |= 1 << (8*(7-(to+i)) + from + i)
	}
	return m
}

// gfMove returns x with the matrix m (a broadcast constant) applied to
// every byte. avo has no GFNI instructions; the Go assembler's operand
// order is the immediate, the matrix, x, the destination.
func gfMove(x reg.VecVirtual, m uint64) reg.VecVirtual {
	out := ZMM()
	mem := constU64(fmt.Sprintf("kfgf%016x", m), m)
	Instruction(&ir.Instruction{
		Opcode:   "VGF2P8AFFINEQB",
		Suffixes: []string{"BCST"},
		Operands: []Op{U8(0), mem, x, out},
		Inputs:   []Op{mem, x},
		Outputs:  []Op{out},
		ISA:      []string{"AVX512F", "GFNI"},
	})
	return out
}
