package grammar

import (
	"errors"
	"fmt"
)

// Limits on the work of one compile and of one step, so that no request, however hostile its
// schema, regex, choice or grammar, costs unbounded time or memory (LLGuidance's lexer and
// "fuel" limits are the model). Work is counted in units, not wall time, so that whether a
// grammar is refused does not depend on the machine's load: a unit is one elementary step of
// the compiler or of the matcher (a schema node combined, an element emitted or checked, a
// parse-stack frame expanded, a vocabulary trie edge or a batch of tokens walked), each a few
// nanoseconds to a few tens of nanoseconds.
const (
	// MaxSchemaDepth bounds the nesting of subschemas (properties, items, applicators...).
	MaxSchemaDepth = 128
	// MaxSchemaNodes bounds the subschemas a JSON schema builds, each $ref counted every
	// time its target is built.
	MaxSchemaNodes = 20000
	// MaxEnumValues and MaxEnumBytes bound one enum (their JSON text), MaxChoices and
	// MaxChoiceBytes a choice (guided_choice).
	MaxEnumValues  = 10000
	MaxEnumBytes   = 1 << 20
	MaxChoices     = 10000
	MaxChoiceBytes = 1 << 20
	// MaxRules bounds the rules of a grammar after translation (auxiliary rules included),
	// maxElems its elements.
	MaxRules = 100000
	// MaxRegexRepeat bounds a repetition count {n,m} of a regex, a GBNF grammar or a
	// pattern (JSON Schema's length and item counts are not repetitions of a regex: they
	// are counted without being unrolled, up to 2^30).
	MaxRegexRepeat = 100000
	// MaxCompileWork bounds the work units of one compile: translating a schema, regex,
	// choice or GBNF to a grammar, and binding it to a vocabulary (CompileWarm: the start
	// state and its token mask).
	MaxCompileWork = 10_000_000
	// MaxStepWork bounds the work units of one token mask or one accepted token
	// (TryFillMask, AcceptLimited): a sequence whose grammar needs more on a step is
	// stopped rather than holding the batch.
	MaxStepWork = 1_000_000
)

// LimitError is a grammar refused, or a step stopped, by one of the limits: it names the
// limit and its value.
type LimitError struct {
	Limit string // what is bounded, e.g. "schema depth"
	Value int64  // the bound
	Where string // where it was exceeded (a JSON pointer), if known
}

func (e *LimitError) Error() string {
	at := ""
	if e.Where != "" {
		at = " at " + e.Where
	}
	return fmt.Sprintf("grammar: over the limit of %d for %s%s", e.Value, e.Limit, at)
}

// at is a copy of e exceeded at the JSON pointer path.
func (e *LimitError) at(path string) *LimitError {
	c := *e
	c.Where = shortPath(path)
	return &c
}

// IsLimit reports whether err is (or wraps) a LimitError.
func IsLimit(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}

// meter counts the work units of one compile; charge panics with a *LimitError past the
// limit, and catchLimit (deferred at the entry points) turns the panic into the error.
type meter struct {
	left, limit int64
	what        string
}

func newMeter(limit int64, what string) *meter { return &meter{left: limit, limit: limit, what: what} }

func (m *meter) charge(n int) {
	if m == nil {
		return
	}
	m.left -= int64(n)
	if m.left < 0 {
		panic(&LimitError{Limit: m.what, Value: m.limit})
	}
}

// used is the work spent so far.
func (m *meter) used() int64 { return m.limit - m.left }

// catchLimit recovers a *LimitError panic into *err (other panics go on).
func catchLimit(err *error) {
	if r := recover(); r != nil {
		le, ok := r.(*LimitError)
		if !ok {
			panic(r)
		}
		*err = le
	}
}

const (
	compileWork = "compile work units"
	stepWork    = "work units of one step (token mask)"
)
