package gguf

import "fmt"

// encodeType returns the GGUF value type of a Go value (see Writer), and
// checks the elements of arrays of arrays.
func encodeType(v any, depth int) (valueType, error) {
	switch x := v.(type) {
	case uint8:
		return typeUint8, nil
	case int8:
		return typeInt8, nil
	case uint16:
		return typeUint16, nil
	case int16:
		return typeInt16, nil
	case uint32:
		return typeUint32, nil
	case int32:
		return typeInt32, nil
	case uint64:
		return typeUint64, nil
	case int64:
		return typeInt64, nil
	case float32:
		return typeFloat32, nil
	case float64:
		return typeFloat64, nil
	case bool:
		return typeBool, nil
	case string:
		return typeString, nil
	case []any:
		if depth+1 >= maxArrayDepth {
			return 0, fmt.Errorf("arrays nested deeper than %d: %w", maxArrayDepth, ErrBadValue)
		}
		for i, el := range x {
			if t, err := encodeType(el, depth+1); err != nil || t != typeArray {
				return 0, fmt.Errorf("element %d of an array of arrays is %T, want a slice: %w", i, el, ErrBadValue)
			}
		}
		return typeArray, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64,
		[]float32, []float64, []bool, []string:
		return typeArray, nil
	}
	return 0, fmt.Errorf("value of type %T cannot be encoded (use a sized integer, float32/64, bool, string or a slice of those): %w", v, ErrBadValue)
}

// value writes a value's type tag and payload; v passed encodeType.
func (e *encoder) value(v any) {
	t, _ := encodeType(v, 0)
	e.u32(uint32(t))
	e.payload(v)
}

// payload writes a value without its type tag.
func (e *encoder) payload(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float32:
		e.u32(f32bits(x))
	case float64:
		e.u64(f64bits(x))
	case bool:
		e.u8(boolByte(x))
	case string:
		e.str(x)
	default:
		e.array(v)
	}
}

// array writes an array body: element type, count, elements.
func (e *encoder) array(v any) {
	switch x := v.(type) {
	case []uint8:
		arrayOf(e, typeUint8, x, e.u8)
	case []int8:
		arrayOf(e, typeInt8, x, func(v int8) { e.u8(uint8(v)) })
	case []uint16:
		arrayOf(e, typeUint16, x, e.u16)
	case []int16:
		arrayOf(e, typeInt16, x, func(v int16) { e.u16(uint16(v)) })
	case []uint32:
		arrayOf(e, typeUint32, x, e.u32)
	case []int32:
		arrayOf(e, typeInt32, x, func(v int32) { e.u32(uint32(v)) })
	case []uint64:
		arrayOf(e, typeUint64, x, e.u64)
	case []int64:
		arrayOf(e, typeInt64, x, func(v int64) { e.u64(uint64(v)) })
	case []float32:
		arrayOf(e, typeFloat32, x, func(v float32) { e.u32(f32bits(v)) })
	case []float64:
		arrayOf(e, typeFloat64, x, func(v float64) { e.u64(f64bits(v)) })
	case []bool:
		arrayOf(e, typeBool, x, func(v bool) { e.u8(boolByte(v)) })
	case []string:
		arrayOf(e, typeString, x, e.str)
	case []any:
		arrayOf(e, typeArray, x, e.array)
	}
}

func arrayOf[T any](e *encoder, t valueType, s []T, put func(T)) {
	e.u32(uint32(t))
	e.u64(uint64(len(s)))
	for _, v := range s {
		put(v)
	}
}
