package runner

import (
	"pagoda/internal/testalloc"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/kvcache"
	"pagoda/model"
	_ "pagoda/model/archs" // registers every architecture
	"pagoda/sched"
)

type fixture struct {
	m      model.Model
	blocks *kvcache.Manager
	s      *sched.Scheduler
	r      *Runner
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	m, _, err := model.Load(testmodel.Stories(t), model.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	blocks, err := kvcache.New(kvcache.Config{BlockSize: 16, NumBlocks: 64, NumHostBlocks: 16, EnablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 256}, blocks)
	if err != nil {
		t.Fatal(err)
	}
	ce, err := NewCacheEngine(m, 64, 16, 16, model.KVF16)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{m, blocks, s, New(m, ce, Options{})}
}

func (f *fixture) add(id string, tokens ...int32) {
	f.s.Add(&sched.Group{RequestID: id, Seqs: []*sched.Sequence{{Tokens: tokens, NumPromptTokens: len(tokens)}}})
}

// A steady-state step allocates nothing in the runner: batch building,
// cache operations and the forward pass reuse their buffers.
func TestExecuteDoesNotAllocate(t *testing.T) {
	f := newFixture(t)
	for i := range 4 {
		f.add(string(rune('a'+i)), 1, int32(300+i), 400, 261, 378, 432)
	}
	prefill, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Execute(&prefill.Step); err != nil {
		t.Fatal(err)
	}
	if n := testalloc.Steady(5, func() { f.r.Execute(&prefill.Step) }); n != 0 {
		t.Errorf("prefill step: %v allocations per Execute", n)
	}
	for _, sq := range prefill.Seqs {
		sq.Seq.Append(383)
	}
	decode, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if len(decode.Seqs) != 4 || decode.NumBatchedTokens != 4 {
		t.Fatalf("want 4 decode tokens, got %d", decode.NumBatchedTokens)
	}
	if _, err := f.r.Execute(&decode.Step); err != nil {
		t.Fatal(err)
	}
	if n := testalloc.Steady(5, func() { f.r.Execute(&decode.Step) }); n != 0 {
		t.Errorf("decode step: %v allocations per Execute", n)
	}
}

// Logits come only for the sampling rows, in step order.
func TestExecuteReturnsSamplingRows(t *testing.T) {
	f := newFixture(t)
	f.add("a", 1, 403, 407)
	f.add("b", 1, 403, 407, 261, 378)
	out, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.r.Execute(&out.Step)
	if err != nil {
		t.Fatal(err)
	}
	logits, rows := res.Logits, res.Rows
	vocab := f.m.Config().VocabSize
	if len(logits) != 2*vocab || rows[0] != (Rows{0, 1}) || rows[1] != (Rows{1, 1}) {
		t.Fatalf("logits %d (vocab %d), rows %v", len(logits), vocab, rows)
	}
	if b := f.r.batch; len(b.Tokens) != 8 || b.QueryStart[2] != 8 || b.LogitIndices[0] != 2 || b.LogitIndices[1] != 7 {
		t.Fatalf("flat batch %+v", b)
	}
}

// Swap and copy operations move whole blocks between the pools.
func TestCacheEngineApply(t *testing.T) {
	f := newFixture(t)
	ce := f.r.Cache()
	dev, host := ce.Device, ce.Host
	n := dev.Layers[0].BlockElems()
	for l := range dev.Layers {
		for i := range n {
			dev.Layers[l].K16[3*n+i] = uint16(l*1000 + i)
			dev.Layers[l].V16[3*n+i] = uint16(l*2000 + i)
		}
	}
	if err := ce.Apply([]kvcache.Swap{{Src: 3, Dst: 5}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := ce.Apply(nil, []kvcache.Swap{{Src: 5, Dst: 9}}, []kvcache.Copy{{Src: 9, Dst: 11}}); err != nil {
		t.Fatal(err)
	}
	for l := range dev.Layers {
		for i := range n {
			if host.Layers[l].K16[5*n+i] != uint16(l*1000+i) || dev.Layers[l].V16[11*n+i] != uint16(l*2000+i) {
				t.Fatalf("layer %d element %d not moved", l, i)
			}
		}
	}
}

// Swaps and copies of a q8_0 cache move its blocks' bytes (34 per 32
// elements) whole, and nothing else.
func TestCacheEngineApplyQ8(t *testing.T) {
	lay := model.LayoutOf(2, nil)
	dev, err := model.NewKVCache(lay, 12, 16, 2, 64, model.KVQ8_0)
	if err != nil {
		t.Fatal(err)
	}
	host, err := model.NewKVCache(lay, 6, 16, 2, 64, model.KVQ8_0)
	if err != nil {
		t.Fatal(err)
	}
	ce := &CacheEngine{Device: dev, Host: host}
	n := model.KVQ8_0.Bytes(dev.Layers[0].BlockElems())
	if n != 16*2*64/32*34 || len(dev.Layers[0].K8) != 12*n {
		t.Fatalf("block of %d bytes, layer of %d", n, len(dev.Layers[0].K8))
	}
	for l := range dev.Layers {
		for i := range n {
			dev.Layers[l].K8[3*n+i] = byte(l*7 + i)
			dev.Layers[l].V8[3*n+i] = byte(l*5 + i + 1)
		}
	}
	if err := ce.Apply([]kvcache.Swap{{Src: 3, Dst: 5}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := ce.Apply(nil, []kvcache.Swap{{Src: 5, Dst: 9}}, []kvcache.Copy{{Src: 9, Dst: 11}}); err != nil {
		t.Fatal(err)
	}
	for l := range dev.Layers {
		for i := range n {
			if host.Layers[l].K8[5*n+i] != byte(l*7+i) || dev.Layers[l].V8[11*n+i] != byte(l*5+i+1) ||
				dev.Layers[l].K8[9*n+i] != byte(l*7+i) {
				t.Fatalf("layer %d byte %d not moved", l, i)
			}
		}
		for i, b := range dev.Layers[l].K8 {
			if blk := i / n; blk != 3 && blk != 9 && blk != 11 && b != 0 {
				t.Fatalf("layer %d: byte %d of block %d written", l, i, blk)
			}
		}
	}
}
