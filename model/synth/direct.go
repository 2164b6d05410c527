package synth

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"pagoda/gguf"
)

// Direct drawing writes random quantized blocks without float weights or
// a quantizer's search (DrawDirect): what gguf.Quantize makes of
// normal(0, std) values, in distribution (TestDirectMatchesQuantized).
// Each (sub-)block gets a half-range A, its largest |value| over std, drawn
// from the distribution of the largest |x| of that many normal values, and
// the scales that quantizing such a block gives: the block scale
// std·A/half (half: the codes from the code of 0 to the extreme), and for
// the K-quants the sub-block scales quantized against the largest as the
// quantizer does (a signed type's signs random, as the side of a block's
// extreme is; the types with a minimum have it at their middle code, so
// min = middle·scale). One random value of the (sub-)block is the extreme
// code; the others are normal values within [-A, A] in code units (half/A
// per std), rounded. Q2_K, whose quantizer fits its scales by least
// squares and clamps the extremes, draws clamped normal codes instead.

// format is how one type's blocks are drawn.
type format struct {
	sub    int     // values per (sub-)block with its own scale
	zero   float64 // the code of the value 0
	half   float64 // codes from zero to a sub-block's extreme
	lo, hi int     // the code range
	asym   bool    // a minimum and a scale, the value 0 at the middle code
	fit    bool    // Q2_K: scales fitted by least squares, extremes clamped
	tables func() *codeTables
}

// codeTables are a format's draws: half-range quantiles, and for each
// sixteenth of them a table of codes indexed by 12 random bits.
type codeTables struct {
	amax  [256]float32 // A at quantile (i+0.5)/256
	codes [16][1 << codeBits]uint8
}

const codeBits = 12

var formats = map[gguf.Type]*format{
	gguf.Q8_0: newFormat(32, 0, 127, -127, 127, false),
	gguf.Q4_0: newFormat(32, 8, 8, 0, 15, false),
	gguf.Q4_1: newFormat(32, 7.5, 7.5, 0, 15, true),
	gguf.Q5_0: newFormat(32, 16, 16, 0, 31, false),
	gguf.Q5_1: newFormat(32, 15.5, 15.5, 0, 31, true),
	gguf.Q2_K: {sub: 16, zero: 1.5, half: 1.5, lo: 0, hi: 3, asym: true, fit: true},
	gguf.Q3_K: newFormat(16, 4, 4, 0, 7, false),
	gguf.Q4_K: newFormat(32, 7.5, 7.5, 0, 15, true),
	gguf.Q5_K: newFormat(32, 15.5, 15.5, 0, 31, true),
	gguf.Q6_K: newFormat(16, 32, 32, 0, 63, false),
}

func newFormat(sub int, zero, half float64, lo, hi int, asym bool) *format {
	return &format{sub: sub, zero: zero, half: half, lo: lo, hi: hi, asym: asym}
}

func init() {
	for _, f := range formats {
		f.tables = sync.OnceValue(f.build)
	}
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// probit is the standard normal quantile function.
func probit(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// extreme is the p-quantile of the largest |x| of n normals; of the
// largest x for Q2_K, whose least-squares scales clamp the extremes (its
// value std then matches the quantizer's, 0.98).
func (f *format) extreme(p float64) float64 {
	q := math.Pow(p, 1/float64(f.sub))
	if f.fit {
		return probit(q)
	}
	return probit((1 + q) / 2)
}

func (f *format) build() *codeTables {
	t := new(codeTables)
	for i := range t.amax {
		t.amax[i] = float32(f.extreme((float64(i) + 0.5) / 256))
	}
	for b := range t.codes {
		a := f.extreme((16*float64(b) + 8) / 256)
		lo, hi := normalCDF(-a), normalCDF(a)
		if f.fit {
			lo, hi = 0, 1 // clamped below
		}
		for u := range t.codes[b] {
			z := probit(lo + (hi-lo)*(float64(u)+0.5)/(1<<codeBits)) // within [-a, a]
			c := min(max(int(math.Round(f.zero+z*f.half/a)), f.lo), f.hi)
			t.codes[b][u] = uint8(int8(c)) // Q8_0's codes are int8
		}
	}
	return t
}

// rng is wyrand: a 64-bit state stepped by a constant and mixed by a
// 128-bit product; each chunk of a tensor has its own.
type rng struct{ s uint64 }

func newRNG(seed, stream, chunk uint64) *rng {
	return &rng{s: splitmix(seed ^ splitmix(stream^splitmix(chunk)))}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// drawn is one block as drawn: its sub-blocks' half-ranges, signs and codes.
type drawn struct {
	a    [16]float32
	neg  uint64 // bit j: sub-block j's scale is negative (signed formats)
	code [256]uint8
}

// draw draws k sub-blocks of f.
func (f *format) draw(r *rng, t *codeTables, k int, d *drawn) {
	x := r.next()
	d.neg = r.next()
	for j := range k {
		if j == 8 {
			x = r.next()
		}
		i := uint8(x >> (8 * (j % 8)))
		d.a[j] = t.amax[i]
		tab := &t.codes[i>>4]
		q := d.code[j*f.sub : (j+1)*f.sub]
		for e := 0; e < len(q); {
			y := r.next()
			for range 5 {
				if e == len(q) {
					break
				}
				q[e] = tab[y&(1<<codeBits-1)]
				y >>= codeBits
				e++
			}
		}
		f.extremes(r.next(), q)
	}
}

// extremes puts a sub-block's extreme value at a random place: the lowest
// code (the signed types' scale sign decides its side), or the lowest or
// highest for the types whose scale has no sign (Q8_0, those with a
// minimum); Q2_K's fitted scales clamp its extremes instead.
func (f *format) extremes(y uint64, q []uint8) {
	p := y % uint64(len(q))
	switch {
	case f.fit:
	case (f.asym || f.lo < 0) && y>>63 == 1: // no scale sign: the side drawn
		q[p] = uint8(int8(f.hi))
	default:
		q[p] = uint8(int8(f.lo))
	}
}

// subScales quantizes k sub-block scales std·a[j]/f.half to [1, levels]
// against the largest; it returns the block scale d.
func (f *format) subScales(d *drawn, k int, std float64, levels int, sc []int) float32 {
	var amax float32
	for _, a := range d.a[:k] {
		amax = max(amax, a)
	}
	scale := std * float64(amax) / f.half / float64(levels)
	for j := range k {
		sc[j] = min(max(int(math.Round(float64(d.a[j]*float32(levels)/amax))), 1), levels)
		if !f.asym && d.neg>>j&1 == 1 {
			sc[j] = -sc[j]
		}
	}
	return float32(scale)
}

// fillDirect fills dst with random blocks of typ for values of std std.
func fillDirect(typ gguf.Type, std float64, r *rng, dst []byte) error {
	switch typ {
	case gguf.F32, gguf.F16, gguf.BF16:
		fillFloat(typ, std, r, dst)
		return nil
	case gguf.MXFP4:
		return fillMXFP4(std, r, dst)
	}
	f, ok := formats[typ]
	if !ok {
		return fmt.Errorf("synth: no direct drawing of %v", typ)
	}
	t := f.tables()
	ts, legacy := typ.TypeSize(), typ.BlockSize() == 32
	var d drawn
	for b := 0; b+ts <= len(dst); b += ts {
		blk := dst[b : b+ts]
		clear(blk)
		if legacy {
			f.draw(r, t, 1, &d)
			f.block32(typ, std, &d, blk)
		} else {
			f.draw(r, t, 256/f.sub, &d)
			f.blockK(typ, std, &d, blk)
		}
	}
	return nil
}

// block32 writes a 32-value block (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1).
func (f *format) block32(typ gguf.Type, std float64, d *drawn, b []byte) {
	scale := float32(std * float64(d.a[0]) / f.half)
	if !f.asym && typ != gguf.Q8_0 && d.neg&1 == 1 {
		scale = -scale // the extreme on the other side
	}
	h := gguf.F32ToF16(scale)
	binary.LittleEndian.PutUint16(b, h)
	q := d.code[:32]
	switch typ {
	case gguf.Q8_0:
		copy(b[2:34], q)
	case gguf.Q4_0:
		packNibbles(q, b[2:18])
	case gguf.Q5_0:
		binary.LittleEndian.PutUint32(b[2:], packNibbles(q, b[6:22]))
	case gguf.Q4_1, gguf.Q5_1:
		binary.LittleEndian.PutUint16(b[2:], gguf.F32ToF16(-float32(f.zero)*gguf.F16ToF32(h)))
		qh := packNibbles(q, b[len(b)-16:])
		if typ == gguf.Q5_1 {
			binary.LittleEndian.PutUint32(b[4:], qh)
		}
	}
}

// packNibbles stores q[j] | q[j+16]<<4 in qs[j] and returns the 5th bits
// (bit j for value j), as gguf's quantizers.
func packNibbles(q []uint8, qs []byte) (qh uint32) {
	for j := range 16 {
		qs[j] = q[j]&0xf | q[j+16]&0xf<<4
	}
	for j, v := range q[:32] {
		qh |= uint32(v>>4&1) << j
	}
	return qh
}

// blockK writes a 256-value K-quant block, in gguf/quant_k.go's layouts.
func (f *format) blockK(typ gguf.Type, std float64, d *drawn, b []byte) {
	var sc [16]int
	q := &d.code
	switch typ {
	case gguf.Q2_K: // scales[16] | qs[64] | d | dmin; min = zero·d·sc
		dd := f.subScales(d, 16, std, 15, sc[:])
		putScales(b[80:], dd, float32(f.zero)*dd)
		for j := range 16 {
			b[j] = uint8(sc[j]) | uint8(sc[j])<<4
		}
		for e, v := range q {
			b[16+32*(e/128)+e%32] |= v << (2 * (e % 128 / 32))
		}
	case gguf.Q3_K: // hmask[32] | qs[64] | scales[12] | d
		dd := f.subScales(d, 16, std, 31, sc[:])
		binary.LittleEndian.PutUint16(b[108:], gguf.F32ToF16(dd))
		for j := range 16 {
			u := uint8(sc[j] + 32)
			b[96+j%8] |= u & 0xf << (4 * (j / 8))
			b[104+j%4] |= u >> 4 << (2 * (j / 4))
		}
		for e, u := range q {
			n, j, l := e/128, e%128/32, e%32
			b[32+32*n+l] |= u & 3 << (2 * j)
			b[l] |= u >> 2 << (4*n + j)
		}
	case gguf.Q4_K, gguf.Q5_K: // d | dmin | scales[12] | (qh[32] |) qs[128]
		dd := f.subScales(d, 8, std, 63, sc[:])
		putScales(b, dd, float32(f.zero)*dd)
		var ls [8]uint8
		for j := range 8 {
			ls[j] = uint8(sc[j])
		}
		packScaleMinK4(&ls, &ls, b[4:16]) // min = zero·d·sc: m = sc
		if typ == gguf.Q4_K {
			for e, v := range q {
				b[16+32*(e/64)+e%32] |= v << (4 * (e % 64 / 32))
			}
			return
		}
		for e, v := range q {
			b[48+32*(e/64)+e%32] |= v & 0xf << (4 * (e % 64 / 32))
			b[16+e%32] |= v >> 4 << (e / 32)
		}
	case gguf.Q6_K: // ql[128] | qh[64] | scales[16] int8 | d
		dd := f.subScales(d, 16, std, 127, sc[:])
		binary.LittleEndian.PutUint16(b[208:], gguf.F32ToF16(dd))
		for j := range 16 {
			b[192+j] = byte(int8(sc[j]))
		}
		for e, v := range q {
			n, g, l := e/128, e%128/32, e%32
			b[64*n+32*(g%2)+l] |= v & 0xf << (4 * (g / 2))
			b[128+32*n+l] |= v >> 4 << (2 * g)
		}
	}
}

// putScales stores d and dmin as halves at b[0:4].
func putScales(b []byte, d, dmin float32) {
	binary.LittleEndian.PutUint16(b, gguf.F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], gguf.F32ToF16(dmin))
}

// packScaleMinK4 packs Q4_K/Q5_K's 6-bit scales and mins (gguf's).
func packScaleMinK4(ls, lm *[8]uint8, s []byte) {
	for j := range 8 {
		if j < 4 {
			s[j] = ls[j]
			s[j+4] = lm[j]
			continue
		}
		s[j+4] = ls[j]&0xf | lm[j]&0xf<<4
		s[j-4] |= ls[j] >> 4 << 6
		s[j] |= lm[j] >> 4 << 6
	}
}

// normals are the standard normal quantiles at (u+0.5)/65536.
var normals = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for u := range t {
		t[u] = float32(probit((float64(u) + 0.5) / (1 << 16)))
	}
	return t
})

// fillFloat fills dst with normal(0, std) values of a float type, each
// from 16 random bits.
func fillFloat(typ gguf.Type, std float64, r *rng, dst []byte) {
	z := normals()
	if typ == gguf.F32 {
		for i := 0; i+16 <= len(dst); i += 16 {
			y := r.next()
			for k := range 4 {
				binary.LittleEndian.PutUint32(dst[i+4*k:], math.Float32bits(float32(std)*z[uint16(y>>(16*k))]))
			}
		}
		for i := len(dst) &^ 15; i < len(dst); i += 4 {
			binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(float32(std)*z[uint16(r.next())]))
		}
		return
	}
	var enc [1 << 16]uint16
	for u, v := range z {
		if typ == gguf.F16 {
			enc[u] = gguf.F32ToF16(float32(std) * v)
		} else {
			enc[u] = gguf.F32ToBF16(float32(std) * v)
		}
	}
	for i := 0; i+8 <= len(dst); i += 8 {
		y := r.next()
		for k := range 4 {
			binary.LittleEndian.PutUint16(dst[i+2*k:], enc[uint16(y>>(16*k))])
		}
	}
	for i := len(dst) &^ 7; i < len(dst); i += 2 {
		binary.LittleEndian.PutUint16(dst[i:], enc[uint16(r.next())])
	}
}
