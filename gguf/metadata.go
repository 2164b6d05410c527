package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// valueType is the GGUF metadata value type tag.
type valueType uint32

const (
	typeUint8   valueType = 0
	typeInt8    valueType = 1
	typeUint16  valueType = 2
	typeInt16   valueType = 3
	typeUint32  valueType = 4
	typeInt32   valueType = 5
	typeFloat32 valueType = 6
	typeBool    valueType = 7
	typeString  valueType = 8
	typeArray   valueType = 9
	typeUint64  valueType = 10
	typeInt64   valueType = 11
	typeFloat64 valueType = 12
)

// maxArrayDepth bounds arrays of arrays, so a hostile file cannot recurse
// deeply.
const maxArrayDepth = 8

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t valueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// size is the encoded size of a scalar of type t; for strings and arrays it
// is the minimum size (their length prefix, or type and count).
func (t valueType) size() int {
	switch t {
	case typeUint8, typeInt8, typeBool:
		return 1
	case typeUint16, typeInt16:
		return 2
	case typeUint32, typeInt32, typeFloat32:
		return 4
	case typeUint64, typeInt64, typeFloat64, typeString:
		return 8
	case typeArray:
		return 12
	}
	return 0
}

// KV is one metadata entry. Value holds one of uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string; an array as
// the typed slice of those ([]uint8 … []string); an array of arrays as []any
// whose elements are such slices (or further []any).
type KV struct {
	Key   string
	Value any
}

// value reads one value of type t.
func (d *decoder) value(t valueType, depth int) (any, error) {
	if t == typeArray {
		return d.array(depth)
	}
	if t == typeString {
		return d.str("string")
	}
	if t.size() == 0 {
		return nil, d.errorf(ErrInvalid, "unknown value type %d", uint32(t))
	}
	b, err := d.take(t.size(), t.String()+" value")
	if err != nil {
		return nil, err
	}
	return scalar(t, b), nil
}

// scalar decodes a fixed-size value of type t from b (len(b) == t.size()).
func scalar(t valueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case typeUint8:
		return b[0]
	case typeInt8:
		return int8(b[0])
	case typeBool:
		return b[0] != 0
	case typeUint16:
		return le.Uint16(b)
	case typeInt16:
		return int16(le.Uint16(b))
	case typeUint32:
		return le.Uint32(b)
	case typeInt32:
		return int32(le.Uint32(b))
	case typeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case typeUint64:
		return le.Uint64(b)
	case typeInt64:
		return int64(le.Uint64(b))
	default: // typeFloat64
		return math.Float64frombits(le.Uint64(b))
	}
}

// array reads an array: element type u32, count u64, elements. The count is
// checked against the remaining bytes before the slice is allocated.
func (d *decoder) array(depth int) (any, error) {
	if depth >= maxArrayDepth {
		return nil, d.errorf(ErrInvalid, "arrays nested deeper than %d", maxArrayDepth)
	}
	et, err := d.u32("array element type")
	if err != nil {
		return nil, err
	}
	t := valueType(et)
	if t.size() == 0 {
		return nil, d.errorf(ErrInvalid, "array of unknown value type %d", et)
	}
	n, err := d.count("array of "+t.String()+" count", t.size())
	if err != nil {
		return nil, err
	}
	switch t {
	case typeString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = d.str(fmt.Sprintf("array element %d", i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case typeArray:
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.array(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	b, _ := d.take(n*t.size(), "array") // count checked n*size <= remaining
	return scalarSlice(t, b, n), nil
}

// scalarSlice decodes n fixed-size elements of type t from b.
func scalarSlice(t valueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case typeUint8:
		return fill(make([]uint8, n), func(i int) uint8 { return b[i] })
	case typeInt8:
		return fill(make([]int8, n), func(i int) int8 { return int8(b[i]) })
	case typeBool:
		return fill(make([]bool, n), func(i int) bool { return b[i] != 0 })
	case typeUint16:
		return fill(make([]uint16, n), func(i int) uint16 { return le.Uint16(b[2*i:]) })
	case typeInt16:
		return fill(make([]int16, n), func(i int) int16 { return int16(le.Uint16(b[2*i:])) })
	case typeUint32:
		return fill(make([]uint32, n), func(i int) uint32 { return le.Uint32(b[4*i:]) })
	case typeInt32:
		return fill(make([]int32, n), func(i int) int32 { return int32(le.Uint32(b[4*i:])) })
	case typeFloat32:
		return fill(make([]float32, n), func(i int) float32 { return math.Float32frombits(le.Uint32(b[4*i:])) })
	case typeUint64:
		return fill(make([]uint64, n), func(i int) uint64 { return le.Uint64(b[8*i:]) })
	case typeInt64:
		return fill(make([]int64, n), func(i int) int64 { return int64(le.Uint64(b[8*i:])) })
	default: // typeFloat64
		return fill(make([]float64, n), func(i int) float64 { return math.Float64frombits(le.Uint64(b[8*i:])) })
	}
}

func fill[T any](s []T, f func(int) T) []T {
	for i := range s {
		s[i] = f(i)
	}
	return s
}
