package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestAttentionSinks: with a sink logit per head (gpt-oss), every mode
// matches the dense reference (the sink in the softmax's denominator
// only), with and without a sliding window, stays batch-invariant, and
// a sink far below every score changes nothing (its exponential is 0).
func TestAttentionSinks(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(3, k)
		defer p.Close()
		r := newRand(31)
		for _, mode := range []AttnMode{AttnMatMul, AttnFlash, AttnTiled} {
			for _, typ := range []KVType{KVF32, KVF16, KVBF16} {
				for _, window := range []int{0, 7} {
					t.Run(fmt.Sprintf("mode%d/kv%d/window%d", mode, typ, window), func(t *testing.T) {
						c := newAttnCase(r, typ, 4, []int{1, 37, 20, 9}, []int{1, 5, 1, 9})
						c.att.Mode, c.att.Window = mode, window
						c.att.Sinks = randVec(r, c.heads, 2)
						c.att.Sinks[0] = 40 // above every score: the flash recurrence's rescaling
						checkDense(t, p, c)
						checkInvariance(t, k, c)
					})
				}
			}
			t.Run(fmt.Sprintf("mode%d/neutral", mode), func(t *testing.T) {
				c := newAttnCase(newRand(32), KVF16, 4, []int{30, 3, 12}, []int{1, 3, 6})
				c.att.Mode = mode
				p.Attention(&c.att, c.kv)
				want := append([]float32(nil), c.att.Out...)
				c.att.Sinks = make([]float32, c.heads)
				for h := range c.att.Sinks {
					c.att.Sinks[h] = -1000
				}
				p.Attention(&c.att, c.kv)
				for i, v := range c.att.Out {
					if math.Float32bits(v) != math.Float32bits(want[i]) {
						t.Fatalf("element %d: %v with a −1000 sink, %v without", i, v, want[i])
					}
				}
			})
		}
	})
}
