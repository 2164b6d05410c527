package llama

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"pagoda/gguf"
	"pagoda/model"
)

// Dense is a straightforward float64 implementation of the architecture
// over the file's dequantized weights, with unquantized activations and
// contiguous full-causal attention: the model's own math without the
// roundings of any arithmetic (pagoda's fast one, llama.cpp's). It is the
// independent reference of the tests and of `pagoda bench kld --reference
// dense`, not a way to serve: it recomputes every position from scratch.
// Only plain RoPE is implemented.
type Dense struct {
	cfg     model.Config
	embd    []float64 // (vocab, dim)
	out     []float64 // (vocab, dim)
	outNorm []float64
	layers  []denseLayer
}

type denseLayer struct {
	attnNorm, ffnNorm      []float64
	wq, wk, wv, wo         []float64 // (out, in)
	bq, bk, bv             []float64
	gate, up, down         []float64
	qDim, kvDim, hiddenDim int
}

// NewDense loads the weights of f, a model of configuration cfg (the
// Config of the model loaded from f), as float64.
func NewDense(f *gguf.File, cfg model.Config) (*Dense, error) {
	if cfg.Rope.Scaling != "" && cfg.Rope.Scaling != model.RopeScalingNone {
		return nil, fmt.Errorf("dense reference: RoPE scaling %q is not implemented", cfg.Rope.Scaling)
	}
	var firstErr error
	get := func(name string, optional bool) []float64 {
		data, info, err := f.TensorData(name)
		if err != nil {
			if !optional && firstErr == nil {
				firstErr = fmt.Errorf("dense reference: %s: %w", name, err)
			}
			return nil
		}
		v := make([]float32, info.NumElements())
		if err := gguf.Dequantize(info.Type, data, v); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("dense reference: %s: %w", name, err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	d := &Dense{cfg: cfg, embd: get("token_embd.weight", false), outNorm: get("output_norm.weight", false)}
	d.out = get("output.weight", true)
	if d.out == nil {
		d.out = d.embd
	}
	for i := range cfg.Layers {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		d.layers = append(d.layers, denseLayer{
			attnNorm: get(n("attn_norm.weight"), false), ffnNorm: get(n("ffn_norm.weight"), false),
			wq: get(n("attn_q.weight"), false), wk: get(n("attn_k.weight"), false),
			wv: get(n("attn_v.weight"), false), wo: get(n("attn_output.weight"), false),
			bq: get(n("attn_q.bias"), true), bk: get(n("attn_k.bias"), true), bv: get(n("attn_v.bias"), true),
			gate: get(n("ffn_gate.weight"), false), up: get(n("ffn_up.weight"), false), down: get(n("ffn_down.weight"), false),
			qDim: cfg.Heads * cfg.HeadDim, kvDim: cfg.KVHeads * cfg.HeadDim, hiddenDim: cfg.HiddenDim,
		})
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return d, nil
}

// matvec returns w·x (+b) for w of (len(w)/len(x), len(x)); rows are
// split over GOMAXPROCS goroutines (each row's sum is the same whatever
// the split).
func matvec(w, x, b []float64) []float64 {
	out := make([]float64, len(w)/len(x))
	parts := min(runtime.GOMAXPROCS(0), max(1, len(w)/(1<<16)))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for r := len(out) * p / parts; r < len(out)*(p+1)/parts; r++ {
				var s float64
				for c, v := range x {
					s += w[r*len(x)+c] * v
				}
				if b != nil {
					s += b[r]
				}
				out[r] = s
			}
		})
	}
	wg.Wait()
	return out
}

func rmsnorm64(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s * w[i]
	}
	return out
}

// rope64 rotates every head of x at position pos by θ_i = pos·base^(−2i/d).
func rope64(x []float64, pos int, c model.Config) {
	d := c.Rope.Dim
	for h := 0; h < len(x); h += c.HeadDim {
		for i := range d / 2 {
			th := float64(pos) * math.Pow(float64(c.Rope.FreqBase), -2*float64(i)/float64(d))
			a, b := h+2*i, h+2*i+1
			if c.Rope.NeoX {
				a, b = h+i, h+i+d/2
			}
			x0, x1 := x[a], x[b]
			x[a] = x0*math.Cos(th) - x1*math.Sin(th)
			x[b] = x0*math.Sin(th) + x1*math.Cos(th)
		}
	}
}

// Forward returns the logits of every position of tokens.
func (d *Dense) Forward(tokens []int32) [][]float64 {
	c := d.cfg
	n, hd := len(tokens), c.HeadDim
	xs := make([][]float64, n)
	for i, tok := range tokens {
		xs[i] = append([]float64(nil), d.embd[int(tok)*c.Dim:(int(tok)+1)*c.Dim]...)
	}
	for _, l := range d.layers {
		ks, vs, qs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range n {
			xn := rmsnorm64(xs[i], l.attnNorm, float64(c.RMSEps))
			qs[i], ks[i], vs[i] = matvec(l.wq, xn, l.bq), matvec(l.wk, xn, l.bk), matvec(l.wv, xn, l.bv)
			rope64(qs[i], i, c)
			rope64(ks[i], i, c)
		}
		for i := range n {
			att := make([]float64, l.qDim)
			for h := range c.Heads {
				kvh := h / (c.Heads / c.KVHeads)
				sc := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := range sc {
					for e := range hd {
						sc[j] += qs[i][h*hd+e] * ks[j][kvh*hd+e]
					}
					sc[j] /= math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[j])
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j, p := range sc {
					for e := range hd {
						att[h*hd+e] += p / sum * vs[j][kvh*hd+e]
					}
				}
			}
			o := matvec(l.wo, att, nil)
			for e := range o {
				xs[i][e] += o[e]
			}
			xn := rmsnorm64(xs[i], l.ffnNorm, float64(c.RMSEps))
			g, u := matvec(l.gate, xn, nil), matvec(l.up, xn, nil)
			for e := range g {
				g[e] = g[e] / (1 + math.Exp(-g[e])) * u[e]
			}
			dn := matvec(l.down, g, nil)
			for e := range dn {
				xs[i][e] += dn[e]
			}
		}
	}
	logits := make([][]float64, n)
	for i := range n {
		logits[i] = matvec(d.out, rmsnorm64(xs[i], d.outNorm, float64(c.RMSEps)), nil)
	}
	return logits
}
