package gguf

import (
	"math"
	"reflect"
	"testing"
)

// accessorFile holds allValues plus an int64 array too large for int32.
func accessorFile(t *testing.T) *File {
	w := NewWriter()
	for _, kv := range allValues {
		w.AddKV(kv.Key, kv.Value)
	}
	w.AddKV("a.i32big", []int64{1, math.MaxInt32 + 1})
	f, err := Parse(writeBytes(t, w))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// accessorWant is what an accessor should return for a key.
type accessorWant[T any] struct {
	v  T
	ok bool
}

// checkAccessor compares get(key) with want for every key of cases; eq
// compares the values.
func checkAccessor[T any](t *testing.T, name string, get func(string) (T, bool), eq func(a, b T) bool, cases map[string]accessorWant[T]) {
	t.Helper()
	for key, want := range cases {
		if v, ok := get(key); !eq(v, want.v) || ok != want.ok {
			t.Errorf("%s(%q) = %v, %v; want %v, %v", name, key, v, ok, want.v, want.ok)
		}
	}
}

func equal[T comparable](a, b T) bool { return a == b }

func TestScalarAccessors(t *testing.T) {
	f := accessorFile(t)
	checkAccessor(t, "Uint", f.Uint, equal, map[string]accessorWant[uint64]{"u8": {200, true}, "i8": {0, false},
		"u32": {4000000000, true}, "u64": {math.MaxUint64, true}, "i64": {0, false}, "f32": {0, false}, "s": {0, false},
		"missing": {0, false}})
	checkAccessor(t, "Int", f.Int, equal, map[string]accessorWant[int64]{"i8": {-100, true}, "u16": {60000, true},
		"i32": {-2000000000, true}, "i64": {math.MinInt64, true}, "u64": {0, false}, "t": {0, false}})
	checkAccessor(t, "Float", f.Float, func(a, b float64) bool { return near(a, b, 0) },
		map[string]accessorWant[float64]{"f32": {-1.25, true}, "f64": {math.Pi, true}, "i16": {-30000, true},
			"u64": {math.MaxUint64, true}, "s": {0, false}})
	if b, ok := f.Bool("t"); !b || !ok {
		t.Error("Bool(t)")
	}
	if _, ok := f.Bool("u8"); ok {
		t.Error("Bool(u8) accepted an integer")
	}
	if s, ok := f.String("s"); s != "héllo" || !ok {
		t.Errorf("String(s) = %q", s)
	}
}

func TestArrayAccessors(t *testing.T) {
	f := accessorFile(t)
	if s, ok := f.Strings("a.str"); !ok || !reflect.DeepEqual(s, []string{"a", "", "ü"}) {
		t.Errorf("Strings = %q", s)
	}
	slices := []struct {
		key  string
		want any
		ok   bool
		get  func(string) (any, bool)
	}{
		{"a.f32", []float32{0.5, float32(math.Inf(-1))}, true, func(k string) (any, bool) { return f.Float32s(k) }},
		{"a.f64", []float32{-0.25}, true, func(k string) (any, bool) { return f.Float32s(k) }},
		{"a.i32", []int32{-7, 8}, true, func(k string) (any, bool) { return f.Int32s(k) }},
		{"a.u8", []int32{1, 2, 255}, true, func(k string) (any, bool) { return f.Int32s(k) }},
		{"a.i64", []int32(nil), false, func(k string) (any, bool) { return f.Int32s(k) }},
		{"a.i32big", []int32(nil), false, func(k string) (any, bool) { return f.Int32s(k) }},
		{"a.u64", []int32(nil), false, func(k string) (any, bool) { return f.Int32s(k) }},
		{"a.str", []float32(nil), false, func(k string) (any, bool) { return f.Float32s(k) }},
	}
	for _, c := range slices {
		got, ok := c.get(c.key)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %#v, %v; want %#v, %v", c.key, got, ok, c.want, c.ok)
		}
	}
}
