package kernels

import "math"

// Activation quantizers. Each converts one row x into the fields of dst
// that its kind uses; dst's slices are already sized for len(x).
//
// bit-exact contract: the Q8 quantizers produce ggml's quantize_row_q8_0,
// quantize_row_q8_1 and quantize_row_q8_K blocks byte for byte
// (TestGoldenQuantize); F16/BF16 rounding is ggml's (nearest even).

// quantizeF32Generic copies x.
func quantizeF32Generic(dst *actRow, x []float32) { copy(dst.f, x) }

// quantizeF16Generic rounds x to half precision (ggml converts activations
// to F16 before an F16 weight dot product).
func quantizeF16Generic(dst *actRow, x []float32) {
	for i, v := range x {
		dst.f[i] = roundF16(v)
	}
}

// quantizeBF16Generic rounds x to bfloat16.
func quantizeBF16Generic(dst *actRow, x []float32) {
	for i, v := range x {
		dst.f[i] = roundBF16(v)
	}
}

// quantizeQ8_0Generic quantizes 32-element blocks as ggml's x86
// quantize_row_q8_0: amax = max|x|, d = amax/127 stored as f16,
// q = round-half-even(x · (127/amax)).
func quantizeQ8_0Generic(dst *actRow, x []float32) {
	for b := range len(x) / 32 {
		d, _ := quantizeBlock8(dst.qs[b*32:(b+1)*32], x[b*32:(b+1)*32])
		dst.d[b] = roundF16(d)
	}
}

// quantizeQ8_1Generic is quantizeQ8_0Generic plus s = f16(d·Σq), with the
// unrounded d, as ggml's x86 quantize_row_q8_1.
func quantizeQ8_1Generic(dst *actRow, x []float32) {
	for b := range len(x) / 32 {
		d, sum := quantizeBlock8(dst.qs[b*32:(b+1)*32], x[b*32:(b+1)*32])
		dst.d[b] = roundF16(d)
		dst.s[b] = roundF16(d * float32(sum))
	}
}

// quantizeBlock8 quantizes one 32-element block and returns its float32
// scale and the sum of its quants.
func quantizeBlock8(q []int8, x []float32) (d float32, sum int32) {
	var amax float32
	for _, v := range x[:32] {
		amax = max(amax, abs32(v))
	}
	d = amax / 127
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for i, v := range x[:32] {
		r := int32(math.RoundToEven(float64(v * id)))
		q[i] = int8(r)
		sum += r
	}
	return d, sum
}

// quantizeQ8KGeneric quantizes 256-element blocks as ggml's
// quantize_row_q8_K: the element of largest magnitude (first one on ties)
// maps to -127, iscale = -127/max, q = min(127, nearest(iscale·x)),
// d = 1/iscale, and bsums holds the sums of each 16 quants.
func quantizeQ8KGeneric(dst *actRow, x []float32) {
	for b := range len(x) / 256 {
		xb := x[b*256 : (b+1)*256]
		qs := dst.qs[b*256 : (b+1)*256]
		bs := dst.bsums[b*16 : (b+1)*16]
		var mx, amax float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			dst.d[b] = 0
			clear(qs)
			clear(bs)
			continue
		}
		iscale := -127 / mx
		for i, v := range xb {
			qs[i] = int8(min(127, int32(math.RoundToEven(float64(iscale*v)))))
		}
		for j := range bs {
			var s int16
			for _, q := range qs[j*16 : (j+1)*16] {
				s += int16(q)
			}
			bs[j] = s
		}
		dst.d[b] = 1 / iscale
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
