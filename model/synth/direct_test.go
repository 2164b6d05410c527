package synth

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"pagoda/gguf"
)

// stats are a tensor's dequantized values: mean, std and largest |x|,
// over std; and the mean |mean| of its 32-value groups, over std.
type stats struct{ mean, std, amax, groupMean float64 }

func statsOf(t *testing.T, typ gguf.Type, data []byte, n int, sd float64) stats {
	t.Helper()
	x := make([]float32, n)
	if err := gguf.Dequantize(typ, data, x); err != nil {
		t.Fatal(err)
	}
	var s, ss, amax, gm, g float64
	for i, v := range x {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%v: value %d is %v", typ, i, v)
		}
		s, ss, amax, g = s+f, ss+f*f, max(amax, math.Abs(f)), g+f
		if i%32 == 31 {
			gm += math.Abs(g / 32)
			g = 0
		}
	}
	mean := s / float64(n)
	return stats{mean / sd, math.Sqrt(ss/float64(n)-mean*mean) / sd, amax / sd, gm / float64(n/32) / sd}
}

// TestDirectMatchesQuantized: directly drawn blocks of every type (and
// MXFP4, gpt-oss's experts) have the
// statistics of quantized normal values: mean 0, the same std (within
// 3%), no larger extremes, no more biased 32-value groups; at the std of
// the residual projections of a deep model too (half-precision
// subnormal scales).
func TestDirectMatchesQuantized(t *testing.T) {
	for _, typ := range append(Types(), gguf.MXFP4) {
		for _, sd := range []float64{std, std / math.Sqrt(96)} {
			t.Run(fmt.Sprintf("%v/%g", typ, sd), func(t *testing.T) {
				tn := tensor{name: "blk.0.ffn_down.weight", dims: []int{256, 1024}, std: sd}
				n := tn.elements()
				size, _ := typ.RowSize(n)
				direct := make([]byte, size)
				if err := fillDirect(typ, sd, newRNG(1, 2, 3), direct); err != nil {
					t.Fatal(err)
				}
				quant, err := gguf.Quantize(typ, source(tn, 1))
				if err != nil {
					t.Fatal(err)
				}
				d, q := statsOf(t, typ, direct, n, sd), statsOf(t, typ, quant, n, sd)
				t.Logf("direct %+.4f ± %.4f max %.2f group mean %.4f; quantized %+.4f ± %.4f max %.2f group mean %.4f",
					d.mean, d.std, d.amax, d.groupMean, q.mean, q.std, q.amax, q.groupMean)
				if math.Abs(d.mean) > 0.01 || math.Abs(d.std/q.std-1) > 0.03 || d.amax > q.amax*1.05 || d.groupMean > q.groupMean*1.1 {
					t.Fatalf("direct: %+v; quantized: %+v", d, q)
				}
			})
		}
	}
}

// TestDirectLayout: each drawn block dequantizes (gguf's dequantizers) to
// its scales times its codes: the codes and scales sit where the format
// wants them.
func TestDirectLayout(t *testing.T) {
	for typ, f := range formats {
		t.Run(typ.String(), func(t *testing.T) {
			r, tabs := newRNG(7, 8, 9), f.tables()
			blk := make([]byte, typ.TypeSize())
			got := make([]float32, typ.BlockSize())
			for range 200 {
				var d drawn
				clear(blk)
				if typ.BlockSize() == 32 {
					f.draw(r, tabs, 1, &d)
					f.block32(typ, std, &d, blk)
				} else {
					f.draw(r, tabs, 256/f.sub, &d)
					f.blockK(typ, std, &d, blk)
				}
				if err := gguf.Dequantize(typ, blk, got); err != nil {
					t.Fatal(err)
				}
				want := expected(typ, f, &d, blk)
				for i := range got {
					if math.Abs(float64(got[i]-want[i])) > 1e-6*std {
						t.Fatalf("value %d: %v, want %v", i, got[i], want[i])
					}
				}
			}
		})
	}
}

// expected computes a drawn block's values from its codes and the scales
// the block stores (d, dmin) and those drawing chose (sub-block scales).
func expected(typ gguf.Type, f *format, d *drawn, blk []byte) []float32 {
	h := func(off int) float32 { return gguf.F16ToF32(uint16(blk[off]) | uint16(blk[off+1])<<8) }
	out := make([]float32, typ.BlockSize())
	if typ.BlockSize() == 32 {
		for i := range out {
			c := float32(d.code[i])
			switch typ {
			case gguf.Q8_0:
				out[i] = h(0) * float32(int8(d.code[i]))
			case gguf.Q4_0, gguf.Q5_0:
				out[i] = h(0) * (c - float32(f.zero))
			default:
				out[i] = h(0)*c + h(2)
			}
		}
		return out
	}
	var sc [16]int
	k := 256 / f.sub
	levels := map[gguf.Type]int{gguf.Q2_K: 15, gguf.Q3_K: 31, gguf.Q4_K: 63, gguf.Q5_K: 63, gguf.Q6_K: 127}[typ]
	f.subScales(d, k, std, levels, sc[:])
	var dd, dmin float32
	switch typ {
	case gguf.Q2_K:
		dd, dmin = h(80), h(82)
	case gguf.Q3_K:
		dd = h(108)
	case gguf.Q4_K, gguf.Q5_K:
		dd, dmin = h(0), h(2)
	case gguf.Q6_K:
		dd = h(208)
	}
	for i := range out {
		j, c := i/f.sub, float32(d.code[i])
		if f.asym {
			out[i] = dd*float32(sc[j])*c - dmin*float32(sc[j])
		} else {
			out[i] = dd * float32(sc[j]) * (c - float32(f.zero))
		}
	}
	return out
}

// TestDirectDeterministic: a directly drawn model (a mix, tensors of
// several chunks) has the same bytes whatever the number of workers, built
// in memory or streamed to a file; another seed other weights.
func TestDirectDeterministic(t *testing.T) {
	s := tinyQwen3MoE
	s.VocabSize = 5000 // embeddings and head of 1.28M values: two chunks each
	build := func(seed uint64, workers int) []byte {
		w, err := Build(Options{Shape: s, Mix: "Q4_K_M", Draw: DrawDirect, Seed: seed, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, c := build(5, 1), build(5, 3), build(6, 2)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different bytes")
	}
	if len(a) != len(c) || bytes.Equal(a, c) {
		t.Fatalf("seeds 5 and 6: %d and %d bytes, equal=%v", len(a), len(c), bytes.Equal(a, c))
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := Write(path, Options{Shape: s, Mix: "Q4_K_M", Draw: DrawDirect, Seed: 5, Workers: 4}); err != nil {
		t.Fatal(err)
	}
	if f, err := os.ReadFile(path); err != nil || !bytes.Equal(f, a) {
		t.Fatalf("streamed file: %v, same bytes %v", err, bytes.Equal(f, a))
	}
}

// TestDraw: DrawAuto quantizes below DirectFrom matrix values and draws
// directly from it; the names parse.
func TestDraw(t *testing.T) {
	direct := func(s Shape, d Draw) bool {
		_, ts, err := plan(Options{Shape: s, Type: gguf.Q4_0, Draw: d})
		if err != nil {
			t.Fatal(err)
		}
		return ts[0].direct
	}
	small, _ := ParseDims("768,2048,8,12,4,32000") // the largest test model, 75M
	big, _ := Lookup("smollm2-135m")
	if direct(small, DrawAuto) || !direct(big, DrawAuto) || !direct(small, DrawDirect) || direct(big, DrawQuantize) {
		t.Fatal("auto, direct or quantize chose the other way")
	}
	for _, d := range []Draw{DrawAuto, DrawQuantize, DrawDirect} {
		if got, err := ParseDraw(d.String()); err != nil || got != d {
			t.Fatalf("ParseDraw(%q) = %v, %v", d.String(), got, err)
		}
	}
	if _, err := ParseDraw("fast"); err == nil {
		t.Fatal("ParseDraw accepted fast")
	}
}

// BenchmarkFillDirect draws a chunk of each type.
func BenchmarkFillDirect(b *testing.B) {
	for _, typ := range Types() {
		b.Run(typ.String(), func(b *testing.B) {
			size, _ := typ.RowSize(chunkValues)
			dst := make([]byte, size)
			b.SetBytes(int64(size))
			r := newRNG(1, 2, 3)
			for b.Loop() {
				if err := fillDirect(typ, std, r, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/chunkValues, "ns/value")
		})
	}
}

// TestMXFP4Code: the direct drawing codes a value as gguf's MXFP4
// quantizer does (a block whose largest value, 12, gives d = 1),
// midpoints and signed zeros included.
func TestMXFP4Code(t *testing.T) {
	xs := []float32{0, -0.1, 0.5, -0.5, 0.51, 1.5, 1.49, 2.5, 3.5, 3.51, 4.9, 5, 5.1, 7, 7.1, 10, 10.1, 12, 15.9, -15.9, -7, -7.1, -2.5}
	for i := range 2000 {
		xs = append(xs, float32(i-1000)/64.5)
	}
	block := make([]float32, 32)
	block[1] = 12
	for _, x := range xs {
		block[0] = x
		q, err := gguf.Quantize(gguf.MXFP4, block)
		if err != nil {
			t.Fatal(err)
		}
		if q[0] != 128 { // e = ⌊log2 12⌋ − 2 + 127 = 128: d = 2^(e−128) = 1
			t.Fatalf("%v: e = %d", x, q[0])
		}
		if got, want := mxfp4Code(x), q[1]&15; got != want {
			t.Errorf("%v: code %d, want %d", x, got, want)
		}
	}
}
