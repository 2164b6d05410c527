package gguf

import "math"

// Value returns the value stored under key.
func (f *File) Value(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	v, _ := f.Value(key)
	s, ok := v.(string)
	return s, ok
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	v, _ := f.Value(key)
	b, ok := v.(bool)
	return b, ok
}

// Uint returns a value of any integer type that is non-negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, _ := f.Value(key)
	if u, ok := v.(uint64); ok {
		return u, true
	}
	i, ok := asInt64(v)
	if !ok || i < 0 {
		return 0, false
	}
	return uint64(i), true
}

// Int returns a value of any integer type that fits an int64.
func (f *File) Int(key string) (int64, bool) {
	v, _ := f.Value(key)
	return asInt64(v)
}

// Float returns a float32 or float64 value, or an integer value converted.
func (f *File) Float(key string) (float64, bool) {
	v, _ := f.Value(key)
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	}
	i, ok := asInt64(v)
	return float64(i), ok
}

// Strings returns a string array. The slice is shared: do not modify it.
func (f *File) Strings(key string) ([]string, bool) {
	v, _ := f.Value(key)
	s, ok := v.([]string)
	return s, ok
}

// Float32s returns a float32 array (shared: do not modify), or a float64
// array converted to a new slice.
func (f *File) Float32s(key string) ([]float32, bool) {
	v, _ := f.Value(key)
	switch x := v.(type) {
	case []float32:
		return x, true
	case []float64:
		return fill(make([]float32, len(x)), func(i int) float32 { return float32(x[i]) }), true
	}
	return nil, false
}

// Int32s returns an int32 array (shared: do not modify), or any other
// integer array whose every element fits an int32, converted to a new slice.
func (f *File) Int32s(key string) ([]int32, bool) {
	v, _ := f.Value(key)
	if x, ok := v.([]int32); ok {
		return x, true
	}
	n, at := intArray(v)
	if at == nil {
		return nil, false
	}
	out := make([]int32, n)
	for i := range out {
		x, ok := at(i)
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// asInt64 converts any integer value that fits an int64.
func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// intArray returns the length of an integer array and an accessor that
// reports false for an element that does not fit an int64; at is nil when v
// is not an integer array.
func intArray(v any) (n int, at func(int) (int64, bool)) {
	switch x := v.(type) {
	case []uint8:
		return len(x), func(i int) (int64, bool) { return int64(x[i]), true }
	case []int8:
		return len(x), func(i int) (int64, bool) { return int64(x[i]), true }
	case []uint16:
		return len(x), func(i int) (int64, bool) { return int64(x[i]), true }
	case []int16:
		return len(x), func(i int) (int64, bool) { return int64(x[i]), true }
	case []uint32:
		return len(x), func(i int) (int64, bool) { return int64(x[i]), true }
	case []int64:
		return len(x), func(i int) (int64, bool) { return x[i], true }
	case []uint64:
		return len(x), func(i int) (int64, bool) { return asInt64(x[i]) }
	}
	return 0, nil
}
