package gguf

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// maxNameLen is the longest tensor name llama.cpp accepts (GGML_MAX_NAME-1).
const maxNameLen = 63

// Writer builds a GGUF v3 file: metadata in insertion order, then tensor
// infos in insertion order, then each tensor's data at the next multiple of
// the alignment (general.alignment if set, else 32), each padded with zeros
// to the alignment as llama.cpp and gguf-py do.
//
// Go types map to GGUF value types one to one: uint8 … int64, float32,
// float64, bool, string, and slices of those as arrays ([]uint8 …
// []string); []any is an array of arrays whose elements are such slices.
// int and uint are rejected: GGUF readers such as llama.cpp check the exact
// type of each key, so the width must be chosen explicitly.
type Writer struct {
	kvs     []KV
	kvIndex map[string]int
	tensors []writerTensor
	names   map[string]bool
	err     error // first error from AddKV, reported by WriteTo
}

type writerTensor struct {
	info TensorInfo
	data []byte
	from func(io.Writer) error // the data, written when the file is (AddTensorFrom)
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kvIndex: map[string]int{}, names: map[string]bool{}}
}

// AddKV adds a metadata entry. Adding a key again replaces its value and
// keeps its first position. An empty key or a value of a type that cannot
// be encoded is reported by WriteTo.
func (w *Writer) AddKV(key string, value any) {
	if w.err == nil {
		if key == "" {
			w.err = fmt.Errorf("gguf: writer: empty metadata key: %w", ErrBadValue)
		} else if _, err := encodeType(value, 0); err != nil {
			w.err = fmt.Errorf("gguf: writer: key %q: %w", key, err)
		}
	}
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i].Value = value
		return
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, KV{Key: key, Value: value})
}

// AddTensor adds a tensor. dims are in ggml order (dims[0] is the row
// length); data must hold exactly t.RowSize(dims[0])·Π dims[1:] bytes. data
// is not copied: it must stay unchanged until the file is written.
func (w *Writer) AddTensor(name string, t Type, dims []int, data []byte) error {
	info, err := w.tensorInfo(name, t, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != info.Size {
		return &FormatError{Where: fmt.Sprintf("tensor %q", name), Msg: fmt.Sprintf("%d bytes of data, %s %v needs %d", len(data), t, dims, info.Size), Err: ErrBadLength}
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: info, data: data})
	return nil
}

// AddTensorFrom adds a tensor whose data from writes when the file is
// written, in file order, so that a file larger than memory streams out:
// from must write exactly the tensor's t.RowSize(dims[0])·Π dims[1:] bytes
// to its io.Writer (WriteTo fails otherwise). It is called once per
// WriteTo.
func (w *Writer) AddTensorFrom(name string, t Type, dims []int, from func(io.Writer) error) error {
	info, err := w.tensorInfo(name, t, dims)
	if err != nil {
		return err
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: info, from: from})
	return nil
}

// tensorInfo checks a new tensor's name and dims and returns its info.
func (w *Writer) tensorInfo(name string, t Type, dims []int) (TensorInfo, error) {
	where := fmt.Sprintf("tensor %q", name)
	if name == "" || len(name) > maxNameLen {
		return TensorInfo{}, &FormatError{Where: where, Msg: fmt.Sprintf("name must be 1 to %d bytes", maxNameLen), Err: ErrInvalid}
	}
	if w.names[name] {
		return TensorInfo{}, &FormatError{Where: where, Msg: "added twice", Err: ErrDuplicated}
	}
	udims := make([]uint64, len(dims))
	for i, d := range dims {
		if d <= 0 {
			return TensorInfo{}, &FormatError{Where: where, Msg: fmt.Sprintf("dim %d is %d, want > 0", i, d), Err: ErrInvalid}
		}
		udims[i] = uint64(d)
	}
	size, err := tensorSize(t, udims)
	if err != nil {
		err.(*FormatError).Where = where
		return TensorInfo{}, err
	}
	return TensorInfo{Name: name, Dims: append([]int(nil), dims...), Type: t, Size: size}, nil
}

// alignment returns general.alignment if set (it must be a uint32 power of
// two, as llama.cpp requires), else 32.
func (w *Writer) alignment() (int, error) {
	i, ok := w.kvIndex[keyAlignment]
	if !ok {
		return defaultAlignment, nil
	}
	a, isU32 := w.kvs[i].Value.(uint32)
	if !isU32 || a == 0 || a&(a-1) != 0 || a > 1<<30 {
		return 0, fmt.Errorf("gguf: writer: key %q must be a uint32 power of two, got %v (%T): %w", keyAlignment, w.kvs[i].Value, w.kvs[i].Value, ErrBadValue)
	}
	return int(a), nil
}

// WriteTo writes the file to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	var off int64 // tensor offsets from the data section
	for i := range w.tensors {
		w.tensors[i].info.Offset = off
		off = alignUp(off+w.tensors[i].info.Size, align)
	}
	e := &encoder{w: bufio.NewWriter(out)}
	e.u32(magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.Key)
		e.value(kv.Value)
	}
	for _, t := range w.tensors {
		e.tensorInfo(t.info)
	}
	e.pad(align)
	for _, t := range w.tensors {
		if t.from != nil {
			e.from(t.info, t.from)
		} else {
			e.bytes(t.data)
		}
		e.pad(align)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.n, e.err
}

// WriteFile writes the file to path, removing it again if writing fails.
func (w *Writer) WriteFile(path string) (err error) {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = w.WriteTo(fh)
	err = errors.Join(err, fh.Close())
	if err != nil {
		os.Remove(path)
	}
	return err
}

// File encodes the file in memory and parses it back: the *File a reader of
// the written file would open (a model built in memory, as tests build them).
func (w *Writer) File() (*File, error) {
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return Parse(buf.Bytes())
}

// encoder writes little-endian values, counting bytes and keeping the first
// error (later writes are no-ops).
type encoder struct {
	w       *bufio.Writer
	n       int64
	err     error
	scratch [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}

// Write makes the encoder an io.Writer for AddTensorFrom's functions.
func (e *encoder) Write(p []byte) (int, error) {
	e.bytes(p)
	if e.err != nil {
		return 0, e.err
	}
	return len(p), nil
}

// from writes a tensor's data with its function and checks the length.
func (e *encoder) from(info TensorInfo, from func(io.Writer) error) {
	if e.err != nil {
		return
	}
	start := e.n
	if err := from(e); err != nil {
		e.err = cmp.Or(e.err, fmt.Errorf("gguf: writer: tensor %q: %w", info.Name, err))
		return
	}
	if n := e.n - start; e.err == nil && n != info.Size {
		e.err = &FormatError{Where: fmt.Sprintf("tensor %q", info.Name), Msg: fmt.Sprintf("wrote %d bytes of data, %s %v needs %d", n, info.Type, info.Dims, info.Size), Err: ErrBadLength}
	}
}

func (e *encoder) u8(v uint8) { e.scratch[0] = v; e.bytes(e.scratch[:1]) }

func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.scratch[:], v)
	e.bytes(e.scratch[:2])
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.scratch[:], v)
	e.bytes(e.scratch[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.scratch[:], v)
	e.bytes(e.scratch[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += int64(n)
		e.err = err
	}
}

// pad writes zeros up to the next multiple of align.
func (e *encoder) pad(align int) {
	for range alignUp(e.n, align) - e.n {
		e.u8(0)
	}
}

func (e *encoder) tensorInfo(t TensorInfo) {
	e.str(t.Name)
	e.u32(uint32(len(t.Dims)))
	for _, d := range t.Dims {
		e.u64(uint64(d))
	}
	e.u32(uint32(t.Type))
	e.u64(uint64(t.Offset))
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// f32bits and f64bits keep the value switch in encode.go short.
func f32bits(f float32) uint32 { return math.Float32bits(f) }
func f64bits(f float64) uint64 { return math.Float64bits(f) }
