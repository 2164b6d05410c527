package gguf

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name   string
	Dims   []int // ggml order: Dims[0] is the row length (contiguous); 1 to 4 positive dims
	Type   Type
	Offset int64 // from File.DataOffset, a multiple of File.Alignment
	Size   int64 // bytes: Type.RowSize(Dims[0]) · Π Dims[1:]
}

// NumElements is the product of Dims.
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// tensorSize validates a tensor's type and dims (uint64 as read from a file)
// and returns its byte size. The error is a *FormatError whose Where the
// caller fills in.
func tensorSize(t Type, dims []uint64) (int64, error) {
	bad := func(sentinel error, format string, args ...any) (int64, error) {
		return 0, &FormatError{Msg: fmt.Sprintf(format, args...), Err: sentinel}
	}
	if len(dims) == 0 || len(dims) > maxDims {
		return bad(ErrInvalid, "%d dims, want 1 to %d", len(dims), maxDims)
	}
	if !t.Known() {
		return bad(ErrBadType, "unknown tensor type %d", uint32(t))
	}
	n := uint64(1)
	for i, d := range dims {
		if d == 0 || d > math.MaxInt64 {
			return bad(ErrInvalid, "dim %d is %d, want 1 to 2^63-1", i, d)
		}
		if n > math.MaxInt64/d {
			return bad(ErrInvalid, "dims %v: element count overflows", dims)
		}
		n *= d
	}
	bs, ts := uint64(t.BlockSize()), uint64(t.TypeSize())
	if dims[0]%bs != 0 {
		return bad(ErrInvalid, "row length %d is not a multiple of the %s block size %d", dims[0], t, bs)
	}
	if n/bs > math.MaxInt64/ts || n > math.MaxInt {
		return bad(ErrInvalid, "dims %v of %s: byte size overflows", dims, t)
	}
	return int64(n / bs * ts), nil
}

func (f *File) readTensorInfos(d *decoder, n int) error {
	f.Tensors = make([]TensorInfo, 0, n)
	f.tensorIndex = make(map[string]int, n)
	for i := range n {
		d.where = fmt.Sprintf("tensor info %d", i)
		name, err := d.uniqueName("tensor name", "tensor", f.tensorIndex)
		if err != nil {
			return err
		}
		ti, err := f.readTensorInfo(d, name)
		if err != nil {
			return err
		}
		f.tensorIndex[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	return nil
}

func (f *File) readTensorInfo(d *decoder, name string) (TensorInfo, error) {
	nDims, err := d.u32("n_dims")
	if err != nil {
		return TensorInfo{}, err
	}
	if nDims == 0 || nDims > maxDims {
		return TensorInfo{}, d.errorf(ErrInvalid, "%d dims, want 1 to %d", nDims, maxDims)
	}
	var dims [maxDims]uint64
	for j := range nDims {
		if dims[j], err = d.u64("dim"); err != nil {
			return TensorInfo{}, err
		}
	}
	typ, err := d.u32("type")
	if err != nil {
		return TensorInfo{}, err
	}
	off, err := d.u64("offset")
	if err != nil {
		return TensorInfo{}, err
	}
	size, err := tensorSize(Type(typ), dims[:nDims])
	if err != nil {
		err.(*FormatError).Where = d.where
		return TensorInfo{}, err
	}
	if off%uint64(f.Alignment) != 0 {
		return TensorInfo{}, d.errorf(ErrInvalid, "offset %d is not a multiple of the alignment %d", off, f.Alignment)
	}
	if off > math.MaxInt64 {
		return TensorInfo{}, d.errorf(ErrInvalid, "offset %d overflows", off)
	}
	ti := TensorInfo{Name: name, Dims: make([]int, nDims), Type: Type(typ), Offset: int64(off), Size: size}
	for j := range ti.Dims {
		ti.Dims[j] = int(dims[j])
	}
	return ti, nil
}

// checkTensorData checks that every tensor's data lies inside the file and
// that no two tensors' data overlap. Messages give absolute file offsets.
func (f *File) checkTensorData() error {
	fileSize := int64(len(f.data))
	for _, ti := range f.Tensors {
		// Offset <= fileSize is checked first, so start cannot overflow.
		if ti.Offset > fileSize || f.DataOffset+ti.Offset > fileSize || ti.Size > fileSize-(f.DataOffset+ti.Offset) {
			start := uint64(f.DataOffset) + uint64(ti.Offset)
			return &FormatError{Where: fmt.Sprintf("tensor %q", ti.Name),
				Msg: fmt.Sprintf("data [%d, %d) runs past end of file (size %d)", start, start+uint64(ti.Size), fileSize),
				Err: ErrTruncated}
		}
	}
	order := make([]int, len(f.Tensors)) // tensor indices by data offset
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(f.Tensors[a].Offset, f.Tensors[b].Offset) })
	for k := 1; k < len(order); k++ {
		prev, cur := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if cur.Offset < prev.Offset+prev.Size {
			at := func(t TensorInfo) (int64, int64) { return f.DataOffset + t.Offset, f.DataOffset + t.Offset + t.Size }
			cs, ce := at(cur)
			ps, pe := at(prev)
			return &FormatError{Where: fmt.Sprintf("tensor %q", cur.Name),
				Msg: fmt.Sprintf("data [%d, %d) overlaps tensor %q [%d, %d)", cs, ce, prev.Name, ps, pe),
				Err: ErrInvalid}
		}
	}
	return nil
}
