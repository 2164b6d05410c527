package sched

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"pagoda/kvcache"
)

// roundTrip checks that st encodes to WireSize bytes, decodes to an equal
// step (into a reused one) and encodes back to the same bytes.
func roundTrip(t *testing.T, st *Step) {
	t.Helper()
	data, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != st.WireSize() {
		t.Fatalf("%d bytes, WireSize says %d", len(data), st.WireSize())
	}
	var got Step
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !sameStep(&got, st) {
		t.Fatalf("round trip changed the step:\n got %+v\nwant %+v", got, *st)
	}
	again, err := got.AppendBinary(nil)
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs (%v)", err)
	}
}

// sameStep compares field by field, nil equal to empty.
func sameStep(a, b *Step) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		x, y := va.Field(i), vb.Field(i)
		if x.Kind() != reflect.Slice {
			if x.Interface() != y.Interface() {
				return false
			}
			continue
		}
		if x.Len() != y.Len() {
			return false
		}
		for j := range x.Len() {
			if x.Index(j).Interface() != y.Index(j).Interface() {
				return false
			}
		}
	}
	return true
}

// randomStep draws a valid step: up to 12 sequences mixing prompt chunks,
// decode tokens and all-logits groups, with cache operations.
func randomStep(r *rand.Rand) *Step {
	const blockSize = 4
	s := &Step{QueryStart: []int32{0}, BlockTableStart: []int32{0}, LogitStart: []int32{0}}
	for range r.IntN(13) {
		q := 1 + r.IntN(20)
		if r.IntN(2) == 0 {
			q = 1
		}
		ctx := q + r.IntN(40)
		row := int32(len(s.Tokens))
		for j := range q {
			s.Tokens = append(s.Tokens, int32(r.IntN(50000)))
			s.Positions = append(s.Positions, int32(ctx-q+j))
		}
		var f SeqFlags
		switch r.IntN(3) {
		case 0:
			f = FlagAllLogits | FlagSample
			for j := range int32(q) {
				s.LogitIndices = append(s.LogitIndices, row+j)
			}
		case 1:
			f = FlagSample
			s.LogitIndices = append(s.LogitIndices, row+int32(q)-1)
		}
		for range (ctx + blockSize - 1) / blockSize {
			s.Blocks = append(s.Blocks, int32(r.IntN(1000)))
		}
		for j := range q {
			b := s.Blocks[len(s.Blocks)-1-(q-1-j+(blockSize-1-(ctx-1)%blockSize))/blockSize]
			s.SlotMapping = append(s.SlotMapping, b*blockSize+int32((ctx-q+j)%blockSize))
		}
		s.SeqIDs = append(s.SeqIDs, r.Int64())
		s.Flags = append(s.Flags, f)
		s.QueryStart = append(s.QueryStart, int32(len(s.Tokens)))
		s.ContextLens = append(s.ContextLens, int32(ctx))
		s.BlockTableStart = append(s.BlockTableStart, int32(len(s.Blocks)))
		s.LogitStart = append(s.LogitStart, int32(len(s.LogitIndices)))
	}
	if n := s.NumSeqs(); n > 1 && r.IntN(2) == 0 {
		s.Split = int32(1 + r.IntN(n-1))
	}
	for range r.IntN(4) {
		s.SwapOut = append(s.SwapOut, kvcache.Swap{Src: int32(r.IntN(1000)), Dst: int32(r.IntN(100))})
		s.SwapIn = append(s.SwapIn, kvcache.Swap{Src: int32(r.IntN(100)), Dst: int32(r.IntN(1000))})
		s.Copies = append(s.Copies, kvcache.Copy{Src: int32(r.IntN(1000)), Dst: int32(r.IntN(1000))})
	}
	return s
}

func TestWireRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	roundTrip(t, &Step{})
	var reused Step
	for i := range 500 {
		st := randomStep(r)
		if err := st.Validate(); err != nil {
			t.Fatalf("step %d: generator made an invalid step: %v", i, err)
		}
		if err := st.CheckBlocks(1000, 100, 4, nil); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		roundTrip(t, st)
		data, _ := st.MarshalBinary()
		if err := reused.UnmarshalBinary(data); err != nil || !sameStep(&reused, st) {
			t.Fatalf("step %d: decoding into a reused step: %v", i, err)
		}
	}
}

// Decoding into a step whose buffers are large enough allocates nothing.
func TestWireDecodeDoesNotAllocate(t *testing.T) {
	st := randomStep(rand.New(rand.NewPCG(3, 4)))
	for st.NumSeqs() < 4 {
		st = randomStep(rand.New(rand.NewPCG(uint64(st.NumSeqs()), 5)))
	}
	data, _ := st.MarshalBinary()
	var got Step
	buf := make([]byte, 0, len(data))
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(10, func() {
		buf, _ = got.AppendBinary(buf[:0])
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per encode and decode", n)
	}
}

func TestWireRejects(t *testing.T) {
	st := randomStep(rand.New(rand.NewPCG(7, 7)))
	for st.NumSeqs() < 2 {
		st = randomStep(rand.New(rand.NewPCG(uint64(st.NumSeqs()), 8)))
	}
	good, _ := st.MarshalBinary()
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic", edit(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"version", edit(func(b []byte) []byte { binary.LittleEndian.PutUint16(b[4:], 1); return b })},
		{"reserved", edit(func(b []byte) []byte { b[6] = 1; return b })},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(slices.Clone(good), 0)},
		{"length", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1<<31); return b })},
		{"count", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[wireHeader+8:], 1<<30); return b })},
		{"groups", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[wireHeader+4:], 2); return b })},
		{"split", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[wireHeader:], uint32(st.NumSeqs())); return b })},
		{"position", edit(func(b []byte) []byte { return corruptSection(b, 8, 0) })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Step
			if err := s.UnmarshalBinary(c.data); !errors.Is(err, ErrInvalidStep) {
				t.Fatalf("decoded a bad step: %v", err)
			}
		})
	}
}

// corruptSection adds 1 to element i of section k, the sections counted
// in wire order from 0 (SeqIDs; 8 is Positions).
func corruptSection(b []byte, k, i int) []byte {
	off := wireHeader + 8 // after the split and the groups
	for sec := range 14 {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		size := 4
		switch {
		case sec == 0 || sec >= 11:
			size = 8
		case sec == 1:
			size = 1
		}
		if sec == k {
			p := off + 4 + i*size
			binary.LittleEndian.PutUint32(b[p:], binary.LittleEndian.Uint32(b[p:])+1)
			return b
		}
		off += 4 + n*size
	}
	return b
}

// Decoding never panics, whatever the bytes; what decodes is a valid step
// whose encoding is the input (the format is canonical).
func FuzzStepUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 8 {
		data, _ := randomStep(r).MarshalBinary()
		f.Add(data)
	}
	f.Add([]byte("PGST\x02\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Step
		if err := s.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidStep) {
				t.Fatalf("error without ErrInvalidStep: %v", err)
			}
			return
		}
		again, err := s.AppendBinary(nil)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decoded step encodes differently (%v)", err)
		}
	})
}

// BenchmarkStepWire encodes and decodes a decode step of 64 sequences
// with 1,000-token contexts (block size 16) and a 2,048-token prefill.
func BenchmarkStepWire(b *testing.B) {
	for _, c := range []struct {
		name      string
		seqs, q   int
		ctx       int
		allLogits bool
	}{{"decode64x1", 64, 1, 1000, false}, {"prefill1x2048", 1, 2048, 2048, false}} {
		st := &Step{QueryStart: []int32{0}, BlockTableStart: []int32{0}, LogitStart: []int32{0}}
		for i := range c.seqs {
			for j := range c.q {
				st.Tokens = append(st.Tokens, int32(j))
				st.Positions = append(st.Positions, int32(c.ctx-c.q+j))
				st.SlotMapping = append(st.SlotMapping, int32(c.ctx-c.q+j))
			}
			for k := range (c.ctx + 15) / 16 {
				st.Blocks = append(st.Blocks, int32(k))
			}
			st.LogitIndices = append(st.LogitIndices, int32(len(st.Tokens)-1))
			st.SeqIDs, st.Flags = append(st.SeqIDs, int64(i)), append(st.Flags, FlagSample)
			st.QueryStart = append(st.QueryStart, int32(len(st.Tokens)))
			st.ContextLens = append(st.ContextLens, int32(c.ctx))
			st.BlockTableStart = append(st.BlockTableStart, int32(len(st.Blocks)))
			st.LogitStart = append(st.LogitStart, int32(len(st.LogitIndices)))
		}
		if err := st.Validate(); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			var got Step
			buf, _ := st.AppendBinary(nil)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = st.AppendBinary(buf[:0])
				if err := got.UnmarshalBinary(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "wire-bytes")
		})
	}
}
