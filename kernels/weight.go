package kernels

import (
	"fmt"
	"runtime"
	"sync"

	"pagoda/gguf"
	"pagoda/internal/hugemem"
)

// Weight is a 2-D weight matrix in its file encoding: Rows output features
// of Cols input features each. Row r occupies bytes
// [r*RowBytes(), (r+1)*RowBytes()) of Data, as GGUF stores a tensor with
// Dims = [Cols, Rows]. Data is typically a slice of the model file's mapping
// and is never written.
type Weight struct {
	Type gguf.Type
	Data []byte
	Rows int
	Cols int

	// packed is an optional copy of Data in the interleaved four-row
	// layout of the accelerated kernels (see Pack); nil when absent. It
	// holds the same values, so results never depend on it.
	packed []byte

	// fast selects the type's fast arithmetic (see Fast; Repack);
	// repacked is its interleaved copy the accelerated kernels read, nil
	// when the implementation has none (the reference dot reads Data).
	fast     *fastTraits
	repacked []byte
}

// Pack returns w with a copy of its rows interleaved in groups of four, the
// layout the accelerated matmul kernels read fastest (one contiguous record
// per block of four rows), when the implementation in use has such kernels
// for w's type; otherwise w unchanged. MatMul results are identical either
// way. The copy costs as much memory as Data; call it once, at load time.
func Pack(w Weight) Weight {
	return pack(def, w)
}

func pack(k *impl, w Weight) Weight {
	if tr := traitsOf(w.Type); tr == nil || tr.packHeader == 0 { // not a layout packRows32 knows
		return w
	}
	g := k.gemm[w.Type]
	if g == nil || g.packed == nil || w.Validate() != nil {
		return w
	}
	w.packed = packRows32(w)
	return w
}

// packRows32 interleaves the rows of a 32-element block type in groups of
// four (see _asm/gemm32.go): per group and block, the four block headers
// (the bytes before the quants), then the quants 16 bytes per row, in
// 16-byte halves of the block for 8-bit quants. Rows past the last are
// zero.
func packRows32(w Weight) []byte {
	return packGroups((w.Rows+3)/4, w.Cols/32*4*w.Type.TypeSize(), func(out []byte, g int) {
		packGroup32(out, w, g)
	})
}

// weightArena holds the repacked weights: matrices are streamed whole at
// every step, and huge pages spare the stream its page walks.
var weightArena hugemem.Arena

// packGroups returns groups records of gb bytes, record g written by
// fill(record, g); groups are split over GOMAXPROCS goroutines (load time
// only).
func packGroups(groups, gb int, fill func(out []byte, g int)) []byte {
	out := weightArena.Bytes(groups * gb)
	parts := min(runtime.GOMAXPROCS(0), groups)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for g := groups * p / parts; g < groups*(p+1)/parts; g++ {
				fill(out[g*gb:(g+1)*gb], g)
			}
		})
	}
	wg.Wait()
	return out
}

// packGroup32 writes group g (rows 4g..4g+3) of w into out.
func packGroup32(out []byte, w Weight, g int) {
	size, hdr := w.Type.TypeSize(), weightTypes[w.Type].packHeader
	nb, rb := w.Cols/32, w.RowBytes()
	for i := range min(4, w.Rows-4*g) {
		row := w.Data[(4*g+i)*rb : (4*g+i+1)*rb]
		for b := range nb {
			src, dst := row[b*size:(b+1)*size], out[b*4*size:(b+1)*4*size]
			copy(dst[i*hdr:(i+1)*hdr], src[:hdr])
			q, d := src[hdr:], dst[4*hdr:]
			for h := 0; h < len(q); h += 16 {
				*(*[16]byte)(d[4*h+16*i:]) = *(*[16]byte)(q[h:])
			}
		}
	}
}

// ReadsCopy reports whether MatMul reads only w's own copy of the rows
// (Pack's or Repack's), never w.Data: Data's memory (e.g. the pages of a
// file mapping) can then be released without slowing the products down.
func (w Weight) ReadsCopy() bool { return w.packed != nil || w.repacked != nil }

// RowBytes is the size in bytes of one row. It is only meaningful for a
// weight that passed Validate.
func (w Weight) RowBytes() int {
	return w.Cols / w.Type.BlockSize() * w.Type.TypeSize()
}

// Validate checks that the type is supported, the shape is positive, Cols
// is a whole number of blocks and Data holds exactly Rows rows.
func (w Weight) Validate() error {
	if !Supported(w.Type) {
		return fmt.Errorf("kernels: weight type %v is not supported", w.Type)
	}
	if w.Rows <= 0 || w.Cols <= 0 {
		return fmt.Errorf("kernels: invalid weight shape %d×%d", w.Rows, w.Cols)
	}
	rb, err := w.Type.RowSize(w.Cols)
	if err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	if len(w.Data) != rb*w.Rows {
		return fmt.Errorf("kernels: %v weight %d×%d needs %d bytes, has %d", w.Type, w.Rows, w.Cols, rb*w.Rows, len(w.Data))
	}
	return nil
}

// row returns the bytes of row r.
func (w *Weight) row(r, rowBytes int) []byte {
	return w.Data[r*rowBytes : (r+1)*rowBytes]
}
