package gguf

import (
	"fmt"
	"math/bits"
	"os"
)

const (
	magic            = 0x46554747 // "GGUF" little-endian
	defaultAlignment = 32
	keyAlignment     = "general.alignment"

	// Minimum encoded sizes, used to reject absurd counts before allocating.
	minKVSize     = 8 + 4 + 1     // key length, value type, 1-byte value
	minTensorSize = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
)

// File is a parsed GGUF file. Its exported fields are read-only after Open
// or Parse; see the package comment for the invariants they satisfy. The
// methods may be called concurrently, except Close.
type File struct {
	Version   uint32
	Alignment int // power of two
	// DataOffset is the start of the tensor data section, a multiple of
	// Alignment. In a file without tensors it may lie past the end.
	DataOffset int64
	KV         []KV         // file order, unique keys
	Tensors    []TensorInfo // file order, unique names

	data        []byte // the whole file; nil after Close
	kvIndex     map[string]int
	tensorIndex map[string]int
	unmap       func() error // releases data; nil for Parse
}

// Open maps the file at path read-only and parses it. Tensor data returned
// by TensorData points into the mapping and is valid until Close.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, unmap, err := mapFile(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// Parse parses a GGUF file held in memory. The File keeps data (tensor data
// is returned as slices of it), so data must not be modified afterwards.
func Parse(data []byte) (*File, error) {
	d := &decoder{buf: data, where: "header"}
	f := &File{data: data}
	if err := f.readHeader(d); err != nil {
		return nil, err
	}
	nTensors, err := d.count("tensor count", minTensorSize)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata count", minKVSize)
	if err != nil {
		return nil, err
	}
	if err := f.readKVs(d, nKV); err != nil {
		return nil, err
	}
	if err := f.readAlignment(); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(d, nTensors); err != nil {
		return nil, err
	}
	f.DataOffset = alignUp(int64(d.off), f.Alignment)
	if err := f.checkTensorData(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) readHeader(d *decoder) error {
	m, err := d.u32("magic")
	if err != nil {
		return err
	}
	if m != magic {
		return &FormatError{Msg: fmt.Sprintf("magic %#08x, want %#08x (\"GGUF\")", m, magic), Err: ErrBadMagic}
	}
	if f.Version, err = d.u32("version"); err != nil {
		return err
	}
	if f.Version != 2 && f.Version != 3 {
		msg := fmt.Sprintf("version %d; only versions 2 and 3 are supported", f.Version)
		if swapped := bits.ReverseBytes32(f.Version); swapped == 2 || swapped == 3 {
			msg = fmt.Sprintf("big-endian GGUF (version %d) is not supported", swapped)
		}
		return &FormatError{Msg: msg, Err: ErrVersion}
	}
	return nil
}

func (f *File) readKVs(d *decoder, n int) error {
	f.KV = make([]KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := range n {
		d.where = fmt.Sprintf("metadata entry %d", i)
		if i > 0 {
			d.where += fmt.Sprintf(" (after key %q)", f.KV[i-1].Key)
		}
		key, err := d.uniqueName("key", "key", f.kvIndex)
		if err != nil {
			return err
		}
		t, err := d.u32("value type")
		if err != nil {
			return err
		}
		v, err := d.value(valueType(t), 0)
		if err != nil {
			return err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	return nil
}

// readAlignment sets Alignment from general.alignment: any integer type
// holding a power of two up to 2^30 (llama.cpp writes uint32).
func (f *File) readAlignment() error {
	f.Alignment = defaultAlignment
	v, ok := f.Value(keyAlignment)
	if !ok {
		return nil
	}
	a, isInt := asInt64(v)
	if !isInt || a <= 0 || a > 1<<30 || a&(a-1) != 0 {
		return &FormatError{Where: fmt.Sprintf("key %q", keyAlignment), Msg: fmt.Sprintf("value %v (%T) is not a power of two up to 2^30", v, v), Err: ErrInvalid}
	}
	f.Alignment = int(a)
	return nil
}

// Close releases the mapping. Tensor data slices obtained from the File must
// not be used afterwards. Close is idempotent.
func (f *File) Close() error {
	f.data = nil
	if f.unmap == nil {
		return nil
	}
	unmap := f.unmap
	f.unmap = nil
	return unmap()
}

// Release tells the system that bytes [from, to) of the named tensor's
// data will not be read soon: with a mapped file (Open) on Linux, the whole
// pages inside that range leave the process's resident memory (the page
// cache keeps them; reading them again faults them back in from the file).
// It changes no data, and does nothing for a File from Parse, or elsewhere.
func (f *File) Release(name string, from, to int64) error {
	ti, ok := f.TensorInfo(name)
	switch {
	case !ok:
		return &FormatError{Where: fmt.Sprintf("tensor %q", name), Msg: "not found", Err: ErrNotFound}
	case from < 0 || to > ti.Size || from > to:
		return fmt.Errorf("gguf: release of bytes [%d, %d) of tensor %q of %d bytes", from, to, name, ti.Size)
	case f.unmap == nil || f.data == nil: // parsed from memory, or closed
		return nil
	}
	start := f.DataOffset + ti.Offset
	return releasePages(f.data[start+from : start+to])
}

// TensorInfo returns the description of the named tensor.
func (f *File) TensorInfo(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorData returns the named tensor's bytes: a slice of the mapping (not a
// copy, capacity clipped to Size), valid until Close. Do not modify it.
func (f *File) TensorData(name string) ([]byte, TensorInfo, error) {
	ti, ok := f.TensorInfo(name)
	if !ok {
		return nil, TensorInfo{}, &FormatError{Where: fmt.Sprintf("tensor %q", name), Msg: "not found", Err: ErrNotFound}
	}
	if f.data == nil {
		return nil, ti, &FormatError{Where: fmt.Sprintf("tensor %q", name), Msg: "file is closed", Err: ErrClosed}
	}
	start := f.DataOffset + ti.Offset
	end := start + ti.Size
	return f.data[start:end:end], ti, nil
}
