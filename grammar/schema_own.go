package grammar

import (
	"errors"
	"math/big"
	"strconv"
)

// own converts the keywords of v that constrain its type and content directly (type,
// enum, const and each type's keywords) and returns the index in v.keys of the first of
// them (-1: none, the result is sAny). Each type keyword applies to values of its type only:
// {"maxLength": 3} alone allows any number.
func (c *conv) own(v *jvalue, base, path string) (*sch, int, error) {
	at := -1
	for i, k := range v.keys {
		if ownKeywords[k] {
			at = i
			break
		}
	}
	if at < 0 {
		return anySch, -1, nil
	}
	types, err := schemaTypes(v, path)
	if err != nil {
		return nil, 0, err
	}
	var alts []*sch
	for _, t := range types {
		if t == "integer" && containsStr(types, "number") {
			continue
		}
		a, err := c.typed(v, t, base, path)
		if err != nil {
			return nil, 0, err
		}
		alts = append(alts, a)
	}
	s := union(alts...)
	if e, ok := v.get("enum"); ok {
		if e.kind != 'a' {
			return nil, 0, schemaErr(path, "enum must be an array")
		}
		if len(e.vals) > MaxEnumValues {
			return nil, 0, &LimitError{Limit: "enum values", Value: MaxEnumValues, Where: shortPath(path + "/enum")}
		}
		if n := e.textBytes(MaxEnumBytes); n > MaxEnumBytes {
			return nil, 0, &LimitError{Limit: "bytes of an enum", Value: MaxEnumBytes, Where: shortPath(path + "/enum")}
		}
		if s, err = c.and(s, litSch(e.vals)); err != nil {
			return nil, 0, err
		}
	}
	if k, ok := v.get("const"); ok {
		if s, err = c.and(s, litSch([]*jvalue{k})); err != nil {
			return nil, 0, err
		}
	}
	return s, at, nil
}

// schemaTypes are the types v allows (all of them without "type").
func schemaTypes(v *jvalue, path string) ([]string, error) {
	t, ok := v.get("type")
	if !ok {
		return []string{"null", "boolean", "number", "string", "array", "object"}, nil
	}
	var types []string
	switch t.kind {
	case 's':
		types = []string{t.str}
	case 'a':
		for _, e := range t.vals {
			if e.kind != 's' {
				return nil, schemaErr(path, "type must be a string or an array of strings")
			}
			types = append(types, e.str)
		}
	default:
		return nil, schemaErr(path, "type must be a string or an array of strings")
	}
	for _, ty := range types {
		if !containsStr(jsonTypes, ty) {
			return nil, schemaErr(path, "unknown type %q", ty)
		}
	}
	return types, nil
}

// typed is the atom of type t constrained by v's keywords for t.
func (c *conv) typed(v *jvalue, t, base, path string) (*sch, error) {
	switch t {
	case "integer", "number":
		n, err := c.numKeywords(v, path)
		if err != nil {
			return nil, err
		}
		n.integer = t == "integer"
		return numAtom(n), nil
	case "string":
		return c.strKeywords(v, path)
	case "array":
		return c.arrKeywords(v, base, path)
	case "object":
		return c.objKeywords(v, base, path)
	}
	return typeAtom(t), nil
}

// ratOf reads a JSON number exactly; exponents beyond ±400 are refused (they would cost
// memory and no grammar bound reaches them).
func ratOf(x *jvalue) (*big.Rat, bool) {
	if x.kind != 'n' || len(x.str) > 400 {
		return nil, false
	}
	for i := 0; i < len(x.str); i++ {
		if x.str[i] == 'e' || x.str[i] == 'E' {
			e, err := strconv.Atoi(x.str[i+1:])
			if err != nil || e > 400 || e < -400 {
				return nil, false
			}
		}
	}
	r, ok := new(big.Rat).SetString(x.str)
	return r, ok
}

func (c *conv) numKeywords(v *jvalue, path string) (*numSch, error) {
	n := &numSch{}
	num := func(k string) (*big.Rat, bool, error) {
		x, ok := v.get(k)
		if !ok {
			return nil, false, nil
		}
		r, ok := ratOf(x)
		if !ok {
			return nil, false, schemaErr(path, "%s must be a number (of at most 400 characters, exponent within ±400)", k)
		}
		return r, true, nil
	}
	var err error
	var has bool
	if n.lo, _, err = num("minimum"); err != nil {
		return nil, err
	}
	if n.hi, _, err = num("maximum"); err != nil {
		return nil, err
	}
	for _, kw := range [...]string{"exclusiveMinimum", "exclusiveMaximum"} {
		x, ok := v.get(kw)
		if !ok {
			continue
		}
		low := kw == "exclusiveMinimum"
		if x.kind == 'b' { // draft 4: a flag on minimum/maximum
			if low && n.lo != nil {
				n.loEx = x.b
			} else if !low && n.hi != nil {
				n.hiEx = x.b
			}
			continue
		}
		var r *big.Rat
		if r, has, err = num(kw); err != nil || !has {
			return nil, err
		}
		if low {
			n.tightenLo(r, true)
		} else {
			n.tightenHi(r, true)
		}
	}
	if m, has, err := num("multipleOf"); err != nil {
		return nil, err
	} else if has {
		if m.Sign() <= 0 {
			return nil, schemaErr(path, "multipleOf must be greater than 0")
		}
		n.mult = m
	}
	return n, nil
}

// tightenLo raises the lower bound to r (exclusive when ex) if that is tighter.
func (n *numSch) tightenLo(r *big.Rat, ex bool) {
	if n.lo == nil {
		n.lo, n.loEx = r, ex
		return
	}
	switch r.Cmp(n.lo) {
	case 1:
		n.lo, n.loEx = r, ex
	case 0:
		n.loEx = n.loEx || ex
	}
}

// tightenHi lowers the upper bound to r (exclusive when ex) if that is tighter.
func (n *numSch) tightenHi(r *big.Rat, ex bool) {
	if n.hi == nil {
		n.hi, n.hiEx = r, ex
		return
	}
	switch r.Cmp(n.hi) {
	case -1:
		n.hi, n.hiEx = r, ex
	case 0:
		n.hiEx = n.hiEx || ex
	}
}

// count reads a non-negative integer keyword (def when absent; 1.0 is an integer). A count
// above maxCount reads as maxCount+1: a maximum that large bounds nothing a model writes,
// and a minimum that large makes the schema unsatisfiable (minCount says so).
func count(v *jvalue, kw string, def int, path string) (int, error) {
	x, ok := v.get(kw)
	if !ok {
		return def, nil
	}
	r, ok := ratOf(x)
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, schemaErr(path, "%s must be a non-negative integer", kw)
	}
	if !r.Num().IsInt64() || r.Num().Int64() > maxCount {
		return maxCount + 1, nil
	}
	return int(r.Num().Int64()), nil
}

func (c *conv) strKeywords(v *jvalue, path string) (*sch, error) {
	s := &strSch{maxLen: -1}
	var err error
	if s.minLen, err = count(v, "minLength", 0, path); err != nil {
		return nil, err
	}
	if s.maxLen, err = count(v, "maxLength", -1, path); err != nil {
		return nil, err
	}
	if s.minLen > maxCount || s.maxLen >= 0 && s.minLen > s.maxLen {
		return noneSch, nil
	}
	if p, ok := v.get("pattern"); ok {
		if p.kind != 's' {
			return nil, schemaErr(path, "pattern must be a string")
		}
		if _, err := c.rx.parse(p.str); err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return nil, le.at(path + "/pattern")
			}
			return nil, schemaErr(path, "pattern: %v", err)
		}
		s.patterns = []string{p.str}
	}
	if f, ok := v.get("format"); ok && f.kind == 's' {
		if _, known := formatRegex[f.str]; known {
			s.formats = []string{f.str}
			if approximateFormats[f.str] {
				if err := c.approx(path, "format "+f.str, "a subset of the format's strings"); err != nil {
					return nil, err
				}
			}
		} else if c.strict {
			return nil, schemaErr(path, "format %q has no grammar, and strict asks for exact enforcement", f.str)
		}
	}
	return strAtom(s), nil
}
