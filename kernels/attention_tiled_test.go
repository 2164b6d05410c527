package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestTiledKernels: each implementation's AttnTiled kernels equal the
// generic ones bit for bit, for every padded head size the loops split
// differently (one chunk, four, four and a rest), partial blocks, one to
// three blocks per call, the scores' maximum over every count of valid
// positions, and the values of two rows at once as of each alone.
func TestTiledKernels(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		r := newRand(91)
		for _, hd := range []int{16, 48, 64, 80, 128, 8} {
			hp := (hd + 15) &^ 15
			t.Run(fmt.Sprintf("hd%d", hd), func(t *testing.T) {
				cache := make([]uint16, 40*hd)
				for i, v := range randVec(r, len(cache), 2) {
					cache[i] = F32ToF16(v)
				}
				for _, n := range []int{16, 1, 7} {
					offs := r.Perm(40)[:n]
					for i := range offs {
						offs[i] *= hd
					}
					want, got := nanVec(16*hp), nanVec(16*hp)
					genericTiled.blockF16(want, cache, offs, hd)
					k.tiled.blockF16(got, cache, offs, hd)
					checkSameF32(t, "block", got, want)

					// three blocks: this one and two more, as a chunk
					chunk := append(append([]float32(nil), want...), randVec(r, 32*hp, 1)...)
					q := randVec(r, hp, 1)
					for nb := 1; nb <= 3; nb++ {
						for cnt := 0; cnt <= 16*nb; cnt++ {
							sw, sg := nanVec(16*nb), nanVec(16*nb)
							mw := genericTiled.scores(sw, q, chunk, 0.125, cnt)
							mg := k.tiled.scores(sg, q, chunk, 0.125, cnt)
							checkSameF32(t, "scores", sg, sw)
							checkSameF32(t, fmt.Sprintf("max of %d in %d blocks", cnt, nb), []float32{mg}, []float32{mw})
							if cnt == 0 && !math.IsInf(float64(mg), -1) {
								t.Fatalf("max of no scores = %v, want −Inf", mg)
							}
						}
					}
					for _, ne := range []int{n, 16 + n, 32 + n} {
						e := randVec(r, ne, 1)
						aw := randVec(r, hp, 1)
						ag := append([]float32(nil), aw...)
						genericTiled.values(aw, e, chunk)
						k.tiled.values(ag, e, chunk)
						checkSameF32(t, fmt.Sprintf("values of %d", ne), ag, aw)

						// two rows at once: each as alone
						e1 := randVec(r, ne, 1)
						bw := randVec(r, hp, 1)
						ag, bg := randVec(r, hp, 1), append([]float32(nil), bw...)
						aw = append([]float32(nil), ag...)
						genericTiled.values(aw, e, chunk)
						genericTiled.values(bw, e1, chunk)
						k.tiled.values2(ag, bg, e, e1, chunk)
						checkSameF32(t, fmt.Sprintf("values2 of %d, first row", ne), ag, aw)
						checkSameF32(t, fmt.Sprintf("values2 of %d, second row", ne), bg, bw)
					}
				}
			})
		}
	})
}

// TestTiledRowGroups: a tile whose rows are taken in groups (the scores'
// scratch bound) gives the same bits as one group.
func TestTiledRowGroups(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		a, kv := sameAttnCase(newRand(93), KVF16, 64, 8, 2, 16, []int{1, 70, 300}, []int{1, 16, 33})
		a.Mode = AttnTiled
		p.Attention(a, kv)
		want := append([]float32(nil), a.Out...)
		defer func(b int) { tiledScratch = b }(tiledScratch)
		for _, budget := range []int{1, 320, 1000} { // 1, 1 and 3 rows of the longest context
			tiledScratch = budget
			clear(a.Out)
			p.Attention(a, kv)
			checkSameF32(t, fmt.Sprintf("scratch %d", budget), a.Out, want)
		}
	})
}

// TestTiledBlockTypes: the BF16 and F32 block conversions place every
// element as blockRows does, head sizes with and without a partial chunk.
func TestTiledBlockTypes(t *testing.T) {
	r := newRand(97)
	for _, hd := range []int{8, 64, 80} {
		x32 := randVec(r, 20*hd, 1)
		x16 := make([]uint16, len(x32))
		for i, v := range x32 {
			x16[i] = F32ToBF16(v)
		}
		offs := []int{3 * hd, 0, 19 * hd, 7 * hd, 11 * hd}
		hp := (hd + 15) &^ 15
		want, got := nanVec(16*hp), nanVec(16*hp)
		blockRows(want, offs, hd, func(off, d int) float32 { return BF16ToF32(x16[off+d]) })
		blockBF16(got, x16, offs, hd)
		checkSameF32(t, fmt.Sprintf("bf16 hd %d", hd), got, want)
		blockRows(want, offs, hd, func(off, d int) float32 { return x32[off+d] })
		blockF32(got, x32, offs, hd)
		checkSameF32(t, fmt.Sprintf("f32 hd %d", hd), got, want)
	}
}

// TestTiledF16InPlace: the kernels on F16 rows in place give what the
// block kernels give on the same rows converted, bit for bit, for the
// valid positions; the rows past them hold anything (NaN and infinity
// patterns here) and change nothing that counts.
func TestTiledF16InPlace(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		f := k.tiled.f16
		if f == nil {
			return // this implementation converts every block
		}
		r := newRand(92)
		for _, hd := range []int{16, 64, 128, 256} {
			t.Run(fmt.Sprintf("hd%d", hd), func(t *testing.T) {
				const blocks = 10 // cache blocks of 16 rows
				cache := make([]uint16, blocks*16*hd)
				for i, v := range randVec(r, len(cache), 2) {
					cache[i] = F32ToF16(v)
				}
				// a chunk: up to tiledChunk blocks in any order
				bases := make([]int, tiledChunk)
				for i, b := range r.Perm(blocks)[:tiledChunk] {
					bases[i] = b * 16 * hd
				}
				q := randVec(r, hd, 1)
				for nb := 1; nb <= tiledChunk; nb++ {
					for cnt := 0; cnt <= 16*nb; cnt++ {
						var offs []int
						for p := range cnt {
							offs = append(offs, bases[p/16]+p%16*hd)
						}
						// the rows past the valid ones: garbage
						garbage := append([]uint16(nil), cache...)
						for p := cnt; p < 16*nb; p++ {
							row := garbage[bases[p/16]+p%16*hd:][:hd]
							for i := range row {
								row[i] = [...]uint16{0x7C00, 0xFC00, 0x7E00, 0x7BFF}[r.IntN(4)]
							}
						}
						chunk := make([]float32, nb*16*hd)
						for i := range nb {
							o := offs[min(16*i, len(offs)):min(16*i+16, len(offs))]
							genericTiled.blockF16(chunk[i*16*hd:][:16*hd], cache, o, hd)
						}
						sw, sg := nanVec(16*nb), nanVec(16*nb)
						mw := genericTiled.scores(sw, q, chunk, 0.125, cnt)
						mg := f.scores(sg, q, garbage, bases[:nb], 0.125, cnt)
						checkSameF32(t, fmt.Sprintf("scores of %d in %d blocks", cnt, nb), sg[:cnt], sw[:cnt])
						checkSameF32(t, fmt.Sprintf("max of %d in %d blocks", cnt, nb), []float32{mg}, []float32{mw})
						// scoresN on 2–4 rows: every row as scores alone
						for rows := 2; rows <= maxF16Rows && cnt > 0; rows++ {
							qs := randVec(r, rows*hd, 1)
							const stride = 80
							outN := nanVec((rows-1)*stride + 16*nb)
							var mx [maxF16Rows]float32
							if !f.scoresN(outN, stride, qs, rows, garbage, bases[:nb], 0.125, cnt, &mx) {
								continue // no kernel for this size
							}
							for i := range rows {
								s1 := nanVec(16 * nb)
								m1 := f.scores(s1, qs[i*hd:][:hd], garbage, bases[:nb], 0.125, cnt)
								checkSameF32(t, fmt.Sprintf("scoresN of %d, row %d of %d", cnt, i, rows), outN[i*stride:][:cnt], s1[:cnt])
								checkSameF32(t, fmt.Sprintf("scoresN max of %d, row %d of %d", cnt, i, rows), mx[i:i+1], []float32{m1})
							}
						}
						if cnt == 0 {
							continue
						}
						e, a0 := randVec(r, cnt, 1), randVec(r, hd, 1)
						aw := append([]float32(nil), a0...)
						genericTiled.values(aw, e, chunk)
						ag := append([]float32(nil), a0...)
						f.values(ag, e, garbage, bases[:nb])
						checkSameF32(t, fmt.Sprintf("values of %d", cnt), ag, aw)
						// valuesN on 1–4 rows: every row as values alone
						var g valueRows
						var want [maxF16Rows][]float32
						for rows := 1; rows <= maxF16Rows; rows++ {
							g.n = rows
							for i := range rows {
								g.e[i] = randVec(r, cnt, 1)
								g.acc[i] = randVec(r, hd, 1)
								want[i] = append([]float32(nil), g.acc[i]...)
								genericTiled.values(want[i], g.e[i], chunk)
							}
							f.valuesN(&g, garbage, bases[:nb])
							for i := range rows {
								checkSameF32(t, fmt.Sprintf("valuesN of %d, row %d of %d", cnt, i, rows), g.acc[i], want[i])
							}
						}
					}
				}
			})
		}
	})
}
