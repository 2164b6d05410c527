package sched

import (
	"encoding/binary"
	"math"

	"pagoda/kvcache"
)

// The wire form of a Step, what rank 0 broadcasts to the other ranks with
// tensor parallelism. All integers are little endian.
//
//	header  (12 bytes)
//	  magic    "PGST"
//	  version  uint16  (WireVersion)
//	  reserved uint16  (0)
//	  length   uint32  bytes of the body that follows
//	body: split uint32 (Split), groups uint32 (Groups), then 14 sections in this order, each a
//	      uint32 element count followed by the elements
//	  SeqIDs (int64)  Flags (uint8)  QueryStart  ContextLens  BlockTableStart
//	  Blocks  LogitStart  Tokens  Positions  SlotMapping  LogitIndices (int32)
//	  SwapOut  SwapIn  Copies (pairs of int32: Src, Dst)
//
// The encoding is canonical: a Step has exactly one wire form, and a
// decoded step encodes back to the same bytes. A receiver of another
// version refuses the step (ranks must run the same build).
const (
	WireVersion = 3
	wireMagic   = "PGST"
	wireHeader  = 12
)

// WireSize is the exact length of the step's wire form.
func (s *Step) WireSize() int {
	n := wireHeader + 8 + 14*4 + 8*len(s.SeqIDs) + len(s.Flags)
	for _, a := range s.int32Sections() {
		n += 4 * len(*a)
	}
	return n + 8*(len(s.SwapOut)+len(s.SwapIn)+len(s.Copies))
}

// int32Sections lists the int32 sections in wire order.
func (s *Step) int32Sections() [9]*[]int32 {
	return [9]*[]int32{&s.QueryStart, &s.ContextLens, &s.BlockTableStart, &s.Blocks, &s.LogitStart,
		&s.Tokens, &s.Positions, &s.SlotMapping, &s.LogitIndices}
}

// AppendBinary appends the step's wire form to dst (encoding.BinaryAppender);
// with room in dst it does not allocate. It fails only when a section
// exceeds the format's 2³²−1 elements.
func (s *Step) AppendBinary(dst []byte) ([]byte, error) {
	size := s.WireSize()
	if size-wireHeader > math.MaxUint32 {
		return dst, invalid("%d bytes do not fit the wire format", size)
	}
	le := binary.LittleEndian
	dst = append(dst, wireMagic...)
	dst = le.AppendUint16(dst, WireVersion)
	dst = le.AppendUint16(dst, 0)
	dst = le.AppendUint32(dst, uint32(size-wireHeader))
	dst = le.AppendUint32(dst, uint32(s.Split))
	dst = le.AppendUint32(dst, uint32(s.Groups))
	dst = le.AppendUint32(dst, uint32(len(s.SeqIDs)))
	for _, v := range s.SeqIDs {
		dst = le.AppendUint64(dst, uint64(v))
	}
	dst = le.AppendUint32(dst, uint32(len(s.Flags)))
	for _, f := range s.Flags {
		dst = append(dst, byte(f))
	}
	for _, a := range s.int32Sections() {
		dst = le.AppendUint32(dst, uint32(len(*a)))
		for _, v := range *a {
			dst = le.AppendUint32(dst, uint32(v))
		}
	}
	for _, sw := range [2][]kvcache.Swap{s.SwapOut, s.SwapIn} {
		dst = le.AppendUint32(dst, uint32(len(sw)))
		for _, w := range sw {
			dst = le.AppendUint32(le.AppendUint32(dst, uint32(w.Src)), uint32(w.Dst))
		}
	}
	dst = le.AppendUint32(dst, uint32(len(s.Copies)))
	for _, c := range s.Copies {
		dst = le.AppendUint32(le.AppendUint32(dst, uint32(c.Src)), uint32(c.Dst))
	}
	return dst, nil
}

// MarshalBinary returns the step's wire form (encoding.BinaryMarshaler).
func (s *Step) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.WireSize()))
}

// UnmarshalBinary decodes a wire form into s, reusing s's buffers (no
// allocation once they are large enough), and validates the result. On
// error s is left reset or partly filled and must not be executed.
func (s *Step) UnmarshalBinary(data []byte) error {
	s.Reset()
	if len(data) < wireHeader || string(data[:4]) != wireMagic {
		return invalid("not a step (bad header)")
	}
	le := binary.LittleEndian
	if v := le.Uint16(data[4:]); v != WireVersion {
		return invalid("wire version %d, this build reads version %d", v, WireVersion)
	}
	if le.Uint16(data[6:]) != 0 {
		return invalid("reserved header bits set")
	}
	if n := le.Uint32(data[8:]); uint64(n) != uint64(len(data)-wireHeader) {
		return invalid("body of %d bytes, header says %d", len(data)-wireHeader, n)
	}
	d := decoder{buf: data[wireHeader:]}
	if len(d.buf) < 8 {
		return invalid("truncated at the split")
	}
	s.Split = int32(d.u32())
	s.Groups = int32(d.u32())
	if n, ok := d.count(8); ok {
		for range n {
			s.SeqIDs = append(s.SeqIDs, int64(d.u64()))
		}
	}
	if n, ok := d.count(1); ok {
		for range n {
			s.Flags = append(s.Flags, SeqFlags(d.u8()))
		}
	}
	for _, a := range s.int32Sections() {
		*a = d.int32s(*a)
	}
	s.SwapOut, s.SwapIn = d.swaps(s.SwapOut), d.swaps(s.SwapIn)
	if n, ok := d.count(8); ok {
		for range n {
			s.Copies = append(s.Copies, kvcache.Copy{Src: int32(d.u32()), Dst: int32(d.u32())})
		}
	}
	if d.bad {
		return invalid("truncated at section data")
	}
	if len(d.buf) != 0 {
		return invalid("%d bytes after the last section", len(d.buf))
	}
	return s.Validate()
}

// decoder reads sections; after the first short read it reads nothing more
// and bad is set.
type decoder struct {
	buf []byte
	bad bool
}

// count reads a section's element count and checks that elements of size
// bytes each fit in what is left.
func (d *decoder) count(size int) (int, bool) {
	if d.bad || len(d.buf) < 4 {
		d.bad = true
		return 0, false
	}
	n := binary.LittleEndian.Uint32(d.buf)
	d.buf = d.buf[4:]
	if uint64(n)*uint64(size) > uint64(len(d.buf)) {
		d.bad = true
		return 0, false
	}
	return int(n), true
}

func (d *decoder) u8() byte {
	v := d.buf[0]
	d.buf = d.buf[1:]
	return v
}

func (d *decoder) u32() uint32 {
	v := binary.LittleEndian.Uint32(d.buf)
	d.buf = d.buf[4:]
	return v
}

func (d *decoder) u64() uint64 {
	v := binary.LittleEndian.Uint64(d.buf)
	d.buf = d.buf[8:]
	return v
}

func (d *decoder) int32s(dst []int32) []int32 {
	n, ok := d.count(4)
	if !ok {
		return dst
	}
	for range n {
		dst = append(dst, int32(d.u32()))
	}
	return dst
}

func (d *decoder) swaps(dst []kvcache.Swap) []kvcache.Swap {
	n, ok := d.count(8)
	if !ok {
		return dst
	}
	for range n {
		dst = append(dst, kvcache.Swap{Src: int32(d.u32()), Dst: int32(d.u32())})
	}
	return dst
}
