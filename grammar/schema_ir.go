package grammar

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// schKind is the kind of a normalized schema.
type schKind uint8

const (
	sAny   schKind = iota // every JSON value (the schema true)
	sNone                 // no value (the schema false, or constraints that contradict)
	sNull                 // null
	sBool                 // true or false
	sNum                  // a number, constrained by num
	sStr                  // a string, constrained by str
	sArr                  // an array, constrained by arr
	sObj                  // an object, constrained by obj
	sLit                  // exactly one of lits
	sUnion                // one of alts (anyOf)
	sRef                  // the schema def stands for (kept by name so that recursion works)
)

// sch is a JSON Schema in the converter's normal form (after LLGuidance's, see its
// docs/json_schema.md): a typed atom, a set of literals, a union of those, or a reference.
// The keywords of one type live in that type's atom, so {"type": ["string", "null"],
// "maxLength": 3} is the union of a string atom with maxLength 3 and null; allOf is the
// intersection of its parts, and the siblings of anyOf, oneOf and $ref are intersected into
// them. Invariants: an sch is never changed after it is built (intersections make new
// ones); a union has at least two alternatives, none of them a union, sAny or sNone; the
// values of sLit are distinct and each valid against every constraint the literal was
// intersected with (they were filtered by the evaluator).
type sch struct {
	kind schKind
	num  *numSch
	str  *strSch
	arr  *arrSch
	obj  *objSch
	lits []*jvalue
	alts []*sch
	def  *schDef
}

// numSch constrains a number: lo/hi bounds (nil: none; exclusive when loEx/hiEx), an
// integer flag (or frac: not an integer, from a negated integer type), a multipleOf (nil:
// none; the least common multiple once intersected), and values excluded (from a negated
// enum or const).
type numSch struct {
	integer    bool
	frac       bool
	lo, hi     *big.Rat
	loEx, hiEx bool
	mult       *big.Rat
	notMult    []*big.Rat // multiples it must not be (from a negated multipleOf)
	not        []*big.Rat
}

// strSch constrains a string: a length in code points (max < 0: none), regular expressions
// in ECMA-262 syntax that must match somewhere in it (JSON Schema's pattern), formats, the
// patterns it must not match, and values it must not be.
type strSch struct {
	minLen, maxLen int
	patterns       []string
	formats        []string
	notPatterns    []string
	notIn          []string
}

// arrSch constrains an array: its length (max < 0: none), the schemas of its first items
// (prefix), of the others (items; nil: any), contains clauses, and uniqueness. prefixNeg
// and itemsNeg mark the item schemas that come from a negation (not, oneOf, if): they do
// not evaluate items for unevaluatedItems.
type arrSch struct {
	minItems, maxItems int
	prefix             []*sch
	items              *sch
	contains           []containsSch
	unique             bool
	prefixNeg          []bool
	itemsNeg           bool
}

// containsSch asks for min..max items (max < 0: no bound) valid against s.
type containsSch struct {
	s        *sch
	min, max int
}

// objSch constrains an object: declared properties in the order to generate them, the
// required names (in order; a required name that is not declared is generated after the
// declared ones), patternProperties, additionalProperties (nil: absent, which allows any
// other property; a non-nil sAny is an explicit true, which unevaluatedProperties treats as
// evaluating everything), propertyNames, and the count of properties (max < 0: none).
type objSch struct {
	props              []propSch
	required           []string
	patterns           []propSch // name is the ECMA-262 pattern
	additional         *sch
	names              *sch
	minProps, maxProps int
}

// propSch is a property's name (or pattern) and schema; neg marks a declaration that comes
// from a negation (not, oneOf, if), which does not evaluate the property for
// unevaluatedProperties.
type propSch struct {
	name string
	s    *sch
	neg  bool
}

// schDef is the target of a $ref: built once, emitted as one grammar rule (so recursive
// schemas work). state is 0 before building, 1 while building (a reference met then that
// must be expanded is a cycle), 2 built.
type schDef struct {
	node  *jvalue
	base  string
	path  string
	built *sch
	state int
	rule  string // the rule's name once emission has started

	// A deferred intersection (node nil): and of the target of of with with (with first
	// when withFirst), met while of was being built (a schema that intersects itself,
	// as {"allOf": [{"$ref": "#"}, …]} under properties); built when first needed.
	of        *schDef
	with      *sch
	withFirst bool
}

var (
	anySch  = &sch{kind: sAny}
	noneSch = &sch{kind: sNone}
	nullSch = &sch{kind: sNull}
	boolSch = &sch{kind: sBool}
)

func numAtom(n *numSch) *sch { return &sch{kind: sNum, num: n} }
func strAtom(s *strSch) *sch { return &sch{kind: sStr, str: s} }
func arrAtom(a *arrSch) *sch { return &sch{kind: sArr, arr: a} }
func objAtom(o *objSch) *sch { return &sch{kind: sObj, obj: o} }

// litSch is the schema of exactly the values vs (sNone when there are none).
func litSch(vs []*jvalue) *sch {
	var out []*jvalue
	if len(vs) > 8 { // by canonical key: linear (comparing each with each is quadratic)
		seen := make(map[string]bool, len(vs))
		var b strings.Builder
		for _, v := range vs {
			b.Reset()
			canonKey(v, &b)
			if k := b.String(); !seen[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
	} else {
		for _, v := range vs {
			dup := false
			for _, w := range out {
				if jsonEqualValues(v, w) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		return noneSch
	}
	return &sch{kind: sLit, lits: out}
}

// canonKey writes a key of v that two values share exactly when jsonEqualValues: numbers
// by value, object keys sorted.
func canonKey(v *jvalue, b *strings.Builder) {
	b.WriteByte(v.kind)
	switch v.kind {
	case 'n':
		if r, ok := ratOf(v); ok {
			b.WriteString(r.RatString())
		} else {
			b.WriteByte('!')
			b.WriteString(v.str)
		}
	case 's':
		b.WriteString(strconv.Quote(v.str))
	case 'b':
		b.WriteString(strconv.FormatBool(v.b))
	case 'a':
		b.WriteByte('[')
		for _, e := range v.vals {
			canonKey(e, b)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case 'o':
		idx := make([]int, len(v.keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(x, y int) int { return strings.Compare(v.keys[x], v.keys[y]) })
		b.WriteByte('{')
		for _, i := range idx {
			b.WriteString(strconv.Quote(v.keys[i]))
			b.WriteByte(':')
			canonKey(v.vals[i], b)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
}

// union is the normalized union of xs: nested unions flattened, sNone dropped, sAny
// absorbing, a single alternative unwrapped.
func union(xs ...*sch) *sch {
	var alts []*sch
	for _, x := range xs {
		switch x.kind {
		case sAny:
			return anySch
		case sNone:
		case sUnion:
			alts = append(alts, x.alts...)
		default:
			alts = append(alts, x)
		}
	}
	switch len(alts) {
	case 0:
		return noneSch
	case 1:
		return alts[0]
	}
	return &sch{kind: sUnion, alts: alts}
}

// typeAtoms are the unconstrained atoms of the JSON types, in the order they are tried.
func typeAtom(t string) *sch {
	switch t {
	case "null":
		return nullSch
	case "boolean":
		return boolSch
	case "integer":
		return numAtom(&numSch{integer: true})
	case "number":
		return numAtom(&numSch{})
	case "string":
		return strAtom(&strSch{maxLen: -1})
	case "array":
		return arrAtom(&arrSch{maxItems: -1})
	case "object":
		return objAtom(&objSch{maxProps: -1})
	}
	return nil
}

// jsonTypes are JSON Schema's type names.
var jsonTypes = []string{"null", "boolean", "object", "array", "number", "string", "integer"}

// kindOfValue is the atom kind a JSON value belongs to.
func kindOfValue(v *jvalue) schKind {
	switch v.kind {
	case 'z':
		return sNull
	case 'b':
		return sBool
	case 'n':
		return sNum
	case 's':
		return sStr
	case 'a':
		return sArr
	}
	return sObj
}
