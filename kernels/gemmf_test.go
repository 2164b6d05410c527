package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// Tests of the float-weight dot products (F32, F16, BF16 weights) and the
// BF16 vector dot against the generic ones.

var floatTypes = []gguf.Type{gguf.F32, gguf.F16, gguf.BF16}

// floatInput returns n values for a float dot product: scaled normals
// (scale 0 picks a wide spread including products that underflow to
// subnormals), specials mixed in when special is set.
func floatInput(r *rand.Rand, n int, scale float64, special bool) []float32 {
	if scale == 0 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(140)-75))
		}
		return v
	}
	return specialVec(r, n, scale, special)
}

// floatRow encodes v as a weight row of typ at byte offset off of a larger
// buffer; raw replaces the values by random bit patterns.
func floatRow(r *rand.Rand, typ gguf.Type, v []float32, off int, raw bool) []byte {
	es := 2
	if typ == gguf.F32 {
		es = 4
	}
	buf := make([]byte, off+es*len(v)+3)
	w := buf[off : off+es*len(v)]
	for i, x := range v {
		switch {
		case raw && typ == gguf.F32:
			binary.LittleEndian.PutUint32(w[4*i:], r.Uint32())
		case raw:
			binary.LittleEndian.PutUint16(w[2*i:], uint16(r.Uint32()))
		case typ == gguf.F32:
			binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(x))
		case typ == gguf.F16:
			binary.LittleEndian.PutUint16(w[2*i:], F32ToF16(x))
		default:
			binary.LittleEndian.PutUint16(w[2*i:], F32ToBF16(x))
		}
	}
	return w
}

// convertAct converts x to typ's activation format with the generic
// quantizer.
func convertAct(typ gguf.Type, x []float32) *actRow {
	a := &actRow{f: make([]float32, len(x))}
	generic.quantize[actKindOf(typ)](a, x)
	return a
}

func checkFloatDot(t *testing.T, k *impl, typ gguf.Type, r *rand.Rand, n, off int, scale float64, special, raw bool) {
	t.Helper()
	w := floatRow(r, typ, floatInput(r, n, scale, special), off, raw)
	a := convertAct(typ, floatInput(r, n, scale, special))
	got, want := k.dot[typ](w, a), generic.dot[typ](w, a)
	if !sameFloat(got, want) {
		t.Fatalf("%s %v n=%d off=%d: %v (%#x), generic %v (%#x)", k.name, typ, n, off,
			got, math.Float32bits(got), want, math.Float32bits(want))
	}
	if typ == gguf.BF16 {
		b := make([]uint16, n)
		for i := range b {
			b[i] = le16(w[2*i:])
		}
		got, want := k.dotBF16(a.f, b), generic.dotBF16(a.f, b)
		if !sameFloat(got, want) {
			t.Fatalf("%s dotBF16 n=%d: %v (%#x), generic %v (%#x)", k.name, n,
				got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// TestFloatDotSameAsGeneric: every length 0..67 and large ones, weights at
// misaligned byte offsets, ordinary, special, subnormal-producing and raw
// bit-pattern inputs.
func TestFloatDotSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		for _, typ := range floatTypes {
			t.Run(typ.String(), func(t *testing.T) {
				r := newRand(uint64(typ) + 40)
				for _, n := range append(vecLens, 2048, 4096+63) {
					for off := range 4 {
						for _, c := range []struct {
							scale   float64
							sp, raw bool
						}{{1, false, false}, {1, true, false}, {0, false, false}, {1e-19, false, false}, {1, false, true}} {
							checkFloatDot(t, k, typ, r, n, off, c.scale, c.sp, c.raw)
						}
					}
				}
			})
		}
	})
}

// TestFloatMatMulSameAsGeneric runs whole matmuls (guards around dst,
// several threads and token counts).
func TestFloatMatMulSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		p := newPool(3, k)
		defer p.Close()
		for _, typ := range floatTypes {
			t.Run(typ.String(), func(t *testing.T) {
				r := newRand(uint64(typ) + 50)
				for _, c := range []struct {
					scale float64
					sp    bool
				}{{1, false}, {1, true}, {0, false}} {
					for _, rows := range []int{1, 3, 17} {
						for _, cols := range []int{1, 3, 4, 7, 63, 64, 65, 130, 200, 576} {
							w := Weight{Type: typ, Data: floatRow(r, typ, floatInput(r, rows*cols, c.scale, c.sp), rows%3, false), Rows: rows, Cols: cols}
							for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 13} {
								checkSameMatMul(t, k, p, w, floatInput(r, n*cols, c.scale, c.sp), n)
							}
						}
					}
				}
			})
		}
	})
}

// FuzzFloatDot compares the float dots with the generic ones on
// fuzzer-chosen weight bytes.
func FuzzFloatDot(f *testing.F) {
	f.Add(uint8(0), uint16(70), uint8(1), uint64(3), []byte{0, 0, 0x80, 0x7f})
	f.Add(uint8(2), uint16(128), uint8(3), uint64(4), []byte{1, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, ti uint8, n16 uint16, off uint8, seed uint64, raw []byte) {
		typ := floatTypes[int(ti)%len(floatTypes)]
		n := int(n16) % 3000
		r := newRand(seed)
		w := floatRow(r, typ, floatInput(r, n, 0, false), int(off)%4, false)
		copy(w, raw)
		a := convertAct(typ, floatInput(r, n, float64(r.IntN(3)), r.IntN(2) == 0))
		want := generic.dot[typ](w, a)
		for _, k := range implementations() {
			if got := k.dot[typ](w, a); !sameFloat(got, want) {
				t.Fatalf("%s %v n=%d: %v, generic %v", k.name, typ, n, got, want)
			}
		}
		// the same bytes as a matrix of a few rows against a few tokens
		if n == 0 {
			return
		}
		rows := 1 + int(seed%4)
		cols := n / rows
		if cols == 0 {
			return
		}
		es := len(w) / n
		m := Weight{Type: typ, Data: w[:rows*cols*es], Rows: rows, Cols: cols}
		nt := int(seed>>8) % 9
		x := floatInput(r, nt*cols, float64(r.IntN(3)), r.IntN(2) == 0)
		fuzzSameMatMul(t, m, x, nt, false)
	})
}

// BenchmarkFloatMatMul: decode (n=1, weights from memory) and batched
// (n=8) F32/F16/BF16 matmuls, each implementation beside the generic one.
func BenchmarkFloatMatMul(b *testing.B) {
	for _, typ := range floatTypes {
		for _, n := range []int{1, 8} {
			for _, k := range implementations() {
				b.Run(fmt.Sprintf("%v/n=%d/%s", typ, n, k.name), func(b *testing.B) {
					r := newRand(60)
					const rows, cols = 1024, 2048
					one := Weight{Type: typ, Data: floatRow(r, typ, floatInput(r, rows*cols, 1, false), 0, false), Rows: rows, Cols: cols}
					benchMatMul(b, k, one, randVec(r, n*cols, 1), n)
				})
			}
		}
	}
}

// TestKernelsNoAlloc: MatMul on the float types and the gemm5/kq23 types
// allocates nothing per call once the pool's scratch has grown; the
// float-weight dot products and the vector kernels never allocate.
func TestKernelsNoAlloc(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		r := newRand(70)
		for _, typ := range append(append([]gguf.Type(nil), floatTypes...), gemm5KQ23Types...) {
			cols := 512
			var w Weight
			if typ.BlockSize() == 1 {
				w = Weight{Type: typ, Data: floatRow(r, typ, floatInput(r, 8*cols, 1, false), 0, false), Rows: 8, Cols: cols}
			} else {
				w = rawBlocks(r, typ, 8, cols, 0, scaleDists["normal"](r))
			}
			x := randVec(r, 3*cols+13, 1)
			dst := make([]float32, 3*8)
			p.MatMul(dst, w, x[:3*cols], 3)
			if a := testing.AllocsPerRun(20, func() { p.MatMul(dst, w, x[:3*cols], 3) }); a != 0 {
				t.Errorf("%v MatMul: %v allocations per call", typ, a)
			}
			if typ.BlockSize() == 1 {
				a := convertAct(typ, x[:cols+13])
				row := floatRow(r, typ, x[:cols+13], 1, false)
				if n := testing.AllocsPerRun(20, func() { k.dot[typ](row, a) }); n != 0 {
					t.Errorf("%v dot: %v allocations per call", typ, n)
				}
			}
		}
		b := make([]uint16, 200)
		h := make([]uint16, 200)
		v, u := randVec(r, 200, 1), randVec(r, 200, 1)
		lanes := randVec(r, 64*13, 1)
		out := make([]float32, 13)
		if n := testing.AllocsPerRun(20, func() {
			k.dotBF16(v, b)
			k.dotF16(v, h)
			k.dotF32(v, u)
			k.axpyF32(v, 0.5, u)
			k.axpyF16(v, 0.5, h)
			k.axpyB16(v, 0.5, b)
			k.madF16(h, 0.5, b)
			k.scaleF16(h, 0.5)
			k.scaleF32(v, 0.5)
			k.rmsNorm(v, u, u, 1e-5)
			k.add(v, u)
			k.mul(v, u)
			k.reduceLanes(out, lanes)
		}); n != 0 {
			t.Errorf("vector kernels: %v allocations per call", n)
		}
	})
}
