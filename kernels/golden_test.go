package kernels

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"pagoda/gguf"
)

// Golden vectors from ggml's own CPU backend (the libggml-cpu of
// llama-cpp-python 0.3.36, AVX-512 build) and glibc 2.36's libm, written by
// testdata/ggml/make_golden.py. Every implementation must reproduce them
// bit for bit: they pin the arithmetic contract of the generic kernels to
// what llama.cpp computes.

// goldenReader walks one golden file.
type goldenReader struct {
	t    *testing.T
	data []byte
}

func openGolden(t *testing.T, name string) *goldenReader {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ggml", name))
	if err != nil {
		t.Fatalf("golden vectors: %v", err)
	}
	return &goldenReader{t: t, data: data}
}

func (g *goldenReader) more() bool { return len(g.data) > 0 }

func (g *goldenReader) take(n int) []byte {
	if len(g.data) < n {
		g.t.Fatalf("golden file truncated")
	}
	b := g.data[:n]
	g.data = g.data[n:]
	return b
}

func (g *goldenReader) u32() int { return int(binary.LittleEndian.Uint32(g.take(4))) }

func (g *goldenReader) f32s(n int) []float32 {
	b := g.take(4 * n)
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func (g *goldenReader) u16s(n int) []uint16 {
	b := g.take(2 * n)
	v := make([]uint16, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return v
}

func (g *goldenReader) f64() float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(g.take(8)))
}

// widen converts half-precision values (f16 or bf16, by conv) to float32.
func widen(h []uint16, conv func(uint16) float32) []float32 {
	v := make([]float32, len(h))
	for i, x := range h {
		v[i] = conv(x)
	}
	return v
}

func TestGoldenDot(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, c := range []struct {
			file string
			dot  func(n int, g *goldenReader) (got float32)
		}{
			{"dot_f16.bin", func(n int, g *goldenReader) float32 {
				x, y := g.u16s(n), g.u16s(n)
				a := widen(y, F16ToF32)
				return k.dotF16(a, x)
			}},
			{"dot_f32.bin", func(n int, g *goldenReader) float32 {
				x, y := g.f32s(n), g.f32s(n)
				return k.dotF32(x, y)
			}},
			{"dot_bf16.bin", func(n int, g *goldenReader) float32 {
				x, y := g.u16s(n), g.u16s(n)
				a := widen(y, BF16ToF32)
				return k.dotBF16(a, x)
			}},
		} {
			t.Run(c.file, func(t *testing.T) {
				g := openGolden(t, c.file)
				for rec := 0; g.more(); rec++ {
					n := g.u32()
					got := c.dot(n, g)
					if want := g.f32s(1)[0]; !sameFloat(got, want) {
						t.Errorf("record %d (n=%d): %v, ggml %v", rec, n, got, want)
					}
				}
			})
		}
	})
}

func TestGoldenSoftmax(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		g := openGolden(t, "softmax.bin")
		for rec := 0; g.more(); rec++ {
			n := g.u32()
			x, want := g.f32s(n), g.f32s(n)
			wantSum := g.f64()
			mx := float32(math.Inf(-1))
			for _, v := range x {
				mx = max(mx, v)
			}
			e := append([]float32(nil), x...)
			if sum := softmaxExp(e, mx); sum != wantSum {
				t.Errorf("record %d (n=%d): sum %v, ggml %v", rec, n, sum, wantSum)
			}
			for i := range e {
				if !sameFloat(e[i], want[i]) {
					t.Fatalf("record %d (n=%d): exp[%d] = %v, ggml %v", rec, n, i, e[i], want[i])
				}
			}
			// The whole kernel: the same exponentials times float32(1/sum).
			k.softmax(x)
			s := float32(1 / wantSum)
			for i := range x {
				if !sameFloat(x[i], want[i]*s) {
					t.Fatalf("record %d (n=%d): softmax[%d] = %v, want %v", rec, n, i, x[i], want[i]*s)
				}
			}
		}
	})
}

func TestGoldenSiLU(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		g := openGolden(t, "silu.bin")
		for rec := 0; g.more(); rec++ {
			n := g.u32()
			x, gate, silu, swiglu := g.f32s(n), g.f32s(n), g.f32s(n), g.f32s(n)
			got := make([]float32, n)
			k.silu(got, x)
			for i := range got {
				if !sameFloat(got[i], silu[i]) {
					t.Fatalf("record %d (n=%d): silu[%d](%v) = %v, ggml %v", rec, n, i, x[i], got[i], silu[i])
				}
			}
			k.swiGLU(got, x, gate)
			for i := range got {
				if !sameFloat(got[i], swiglu[i]) {
					t.Fatalf("record %d (n=%d): swiglu[%d] = %v, ggml %v", rec, n, i, got[i], swiglu[i])
				}
			}
		}
	})
}

// TestGoldenQuantize checks the activation quantizers against ggml's
// quantize_row_q8_0/q8_1/q8_K, block by block.
func TestGoldenQuantize(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, c := range []struct {
			file  string
			kind  actKind
			block int // elements
			size  int // bytes
		}{
			{"q8_0.bin", actQ8_0, 32, 34},
			{"q8_1.bin", actQ8_1, 32, 36},
			{"q8_K.bin", actQ8K, 256, 292},
		} {
			t.Run(c.file, func(t *testing.T) {
				g := openGolden(t, c.file)
				for rec := 0; g.more(); rec++ {
					n := g.u32()
					x := g.f32s(n)
					want := g.take(n / c.block * c.size)
					var a actRows
					a.prepare(k, c.kind, x, 1, n)
					for b := range n / c.block {
						if got := encodeActBlock(c.kind, &a.rows[0], b); string(got) != string(want[b*c.size:(b+1)*c.size]) {
							t.Fatalf("record %d block %d:\n got %x\nggml %x", rec, b, got, want[b*c.size:(b+1)*c.size])
						}
					}
				}
			})
		}
	})
}

// encodeActBlock lays block b of a converted row out as ggml's block_q8_0,
// block_q8_1 or block_q8_K.
func encodeActBlock(kind actKind, r *actRow, b int) []byte {
	var out []byte
	bl := kind.block()
	switch kind {
	case actQ8_0:
		out = binary.LittleEndian.AppendUint16(out, F32ToF16(r.d[b]))
	case actQ8_1:
		out = binary.LittleEndian.AppendUint16(out, F32ToF16(r.d[b]))
		out = binary.LittleEndian.AppendUint16(out, F32ToF16(r.s[b]))
	case actQ8K:
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(r.d[b]))
	}
	for _, q := range r.qs[b*bl : (b+1)*bl] {
		out = append(out, byte(q))
	}
	if kind == actQ8K {
		for _, s := range r.bsums[b*16 : (b+1)*16] {
			out = binary.LittleEndian.AppendUint16(out, uint16(s))
		}
	}
	return out
}

func TestGoldenF16(t *testing.T) {
	g := openGolden(t, "fp16.bin")
	n := g.u32()
	x, want := g.f32s(n), g.u16s(n)
	for i := range x {
		if got := F32ToF16(x[i]); got != want[i] {
			t.Errorf("F32ToF16(%v) = %#04x, ggml %#04x", x[i], got, want[i])
		}
	}
}

func TestGoldenLibm(t *testing.T) {
	t.Run("sincosf", func(t *testing.T) {
		g := openGolden(t, "sincosf.bin")
		n := g.u32()
		x, sc := g.f32s(n), g.f32s(2*n)
		for i, v := range x {
			if s, c := sincosf(v); !sameFloat(s, sc[2*i]) || !sameFloat(c, sc[2*i+1]) {
				t.Errorf("sincosf(%v) = %v, %v; glibc %v, %v", v, s, c, sc[2*i], sc[2*i+1])
			}
		}
	})
	t.Run("expf", func(t *testing.T) {
		g := openGolden(t, "expf.bin")
		n := g.u32()
		x, y := g.f32s(n), g.f32s(n)
		for i, v := range x {
			if got := expf(v); !sameFloat(got, y[i]) {
				t.Errorf("expf(%v) = %v, glibc %v", v, got, y[i])
			}
		}
	})
	t.Run("powf", func(t *testing.T) {
		g := openGolden(t, "powf.bin")
		for g.more() {
			v := g.f32s(3)
			if got := powf(v[0], v[1]); !sameFloat(got, v[2]) {
				t.Errorf("powf(%v, %v) = %v, glibc %v", v[0], v[1], got, v[2])
			}
		}
	})
}

// goldenQuantTypes are the quantized weight types with ggml golden files.
var goldenQuantTypes = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0,
	gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.MXFP4}

// TestGoldenQuantDot checks the quantized dot products: ggml quantizes a
// weight row and an activation row and computes its vec_dot; our
// quantizer converts the same activations (TestGoldenQuantize shows it
// agrees) and our dot must give the same float32.
func TestGoldenQuantDot(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, typ := range goldenQuantTypes {
			t.Run(typ.String(), func(t *testing.T) {
				g := openGolden(t, "vec_dot_"+goldenTypeName(typ)+".bin")
				for rec := 0; g.more(); rec++ {
					n := g.u32()
					w := g.take(n / typ.BlockSize() * typ.TypeSize())
					x := g.f32s(n)
					want := g.f32s(1)[0]
					var a actRows
					a.prepare(k, actKindOf(typ), x, 1, n)
					if got := k.dot[typ](w, &a.rows[0]); !sameFloat(got, want) {
						t.Errorf("record %d (n=%d): %v, ggml %v", rec, n, got, want)
					}
				}
			})
		}
	})
}

// goldenTypeName is ggml's lower-case type name (q4_K, q8_0, ...).
func goldenTypeName(t gguf.Type) string {
	if t == gguf.MXFP4 {
		return "mxfp4"
	}
	s := []byte(t.String())
	for i, c := range s {
		if c == 'Q' {
			s[i] = 'q'
		}
	}
	return string(s)
}

// TestGoldenDequantize checks DequantizeRow (embedding lookups: ggml's
// get_rows) against ggml's dequantize_row_* on the same rows.
func TestGoldenDequantize(t *testing.T) {
	for _, typ := range goldenQuantTypes {
		t.Run(typ.String(), func(t *testing.T) {
			g := openGolden(t, "dequant_"+goldenTypeName(typ)+".bin")
			for rec := 0; g.more(); rec++ {
				n := g.u32()
				w := Weight{Type: typ, Data: g.take(n / typ.BlockSize() * typ.TypeSize()), Rows: 1, Cols: n}
				want := g.f32s(n)
				got := make([]float32, n)
				DequantizeRow(got, w, 0)
				for i := range got {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("record %d (n=%d): element %d = %v, ggml %v", rec, n, i, got[i], want[i])
					}
				}
			}
		})
	}
}
