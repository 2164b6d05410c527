package bucket

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Phase is the kind of step a bucket serves.
type Phase uint8

const (
	Prompt Phase = iota // steps with prompt (prefill) tokens
	Decode              // steps of one new token per sequence
)

// Dim is one bucketed dimension of a shape.
type Dim uint8

const (
	BS    Dim = iota // batch size
	Seq              // query tokens
	Block            // KV blocks (context blocks for prompts)
)

// Param is one field of a range config that can be overridden.
type Param uint8

const (
	Min Param = iota
	Step
	Max
)

func (p Phase) String() string { return [...]string{Prompt: "prompt", Decode: "decode"}[p] }
func (d Dim) String() string   { return [...]string{BS: "bs", Seq: "seq", Block: "block"}[d] }
func (p Param) String() string { return [...]string{Min: "min", Step: "step", Max: "max"}[p] }

// Key names one overridable setting, e.g. {Prompt, Seq, Max}, set by
// PAGODA_PROMPT_SEQ_BUCKET_MAX or --prompt-seq-bucket-max.
type Key struct {
	Phase Phase
	Dim   Dim
	Param Param
}

// EnvVar returns the environment variable of k, e.g. PAGODA_DECODE_BLOCK_BUCKET_STEP.
func (k Key) EnvVar() string {
	return strings.ToUpper(fmt.Sprintf("PAGODA_%s_%s_BUCKET_%s", k.Phase, k.Dim, k.Param))
}

// Flag returns the command-line flag name of k (without dashes), e.g.
// decode-block-bucket-step.
func (k Key) Flag() string {
	return fmt.Sprintf("%s-%s-bucket-%s", k.Phase, k.Dim, k.Param)
}

// Keys returns all 18 keys, prompt before decode, then bs, seq, block, then
// min, step, max.
func Keys() []Key {
	keys := make([]Key, 0, 18)
	for _, p := range []Phase{Prompt, Decode} {
		for _, d := range []Dim{BS, Seq, Block} {
			for _, q := range []Param{Min, Step, Max} {
				keys = append(keys, Key{p, d, q})
			}
		}
	}
	return keys
}

// Overrides holds user-set config fields. The zero value has none set.
// Each set field remembers its source (the variable or flag that set it), so
// warnings can name it.
type Overrides struct {
	val [2][3][3]int    // [phase][dim][param]
	src [2][3][3]string // "" when unset
}

// Set overrides k with v; source names where the value came from.
func (o *Overrides) Set(k Key, v int, source string) {
	o.val[k.Phase][k.Dim][k.Param] = v
	o.src[k.Phase][k.Dim][k.Param] = source
}

// Get returns the value of k and whether it is set.
func (o *Overrides) Get(k Key) (int, bool) {
	return o.val[k.Phase][k.Dim][k.Param], o.src[k.Phase][k.Dim][k.Param] != ""
}

// Source returns what set k ("" when unset).
func (o *Overrides) Source(k Key) string { return o.src[k.Phase][k.Dim][k.Param] }

// SetKeys returns the set keys of phase p in Keys order.
func (o *Overrides) SetKeys(p Phase) []Key {
	var keys []Key
	for _, k := range Keys() {
		if _, ok := o.Get(k); ok && k.Phase == p {
			keys = append(keys, k)
		}
	}
	return keys
}

// apply returns r with the set fields of (p, d) replaced.
func (o *Overrides) apply(p Phase, d Dim, r Range) Range {
	fields := [3]*int{Min: &r.Min, Step: &r.Step, Max: &r.Max}
	for q, f := range fields {
		if v, ok := o.Get(Key{p, d, Param(q)}); ok {
			*f = v
		}
	}
	return r
}

// OverridesFromEnv reads every PAGODA_*_BUCKET_* variable through lookup
// (e.g. os.LookupEnv). Unset or empty variables are ignored; a value that is
// not a non-negative integer is an error naming the variable (all such errors
// are joined).
func OverridesFromEnv(lookup func(string) (string, bool)) (Overrides, error) {
	var o Overrides
	var errs []error
	for _, k := range Keys() {
		name := k.EnvVar()
		s, ok := lookup(name)
		if !ok || strings.TrimSpace(s) == "" {
			continue
		}
		v, err := parseOverride(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", name, s, err))
			continue
		}
		o.Set(k, v, name)
	}
	return o, errors.Join(errs...)
}

func parseOverride(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not an integer")
	}
	if v < 0 {
		return 0, errors.New("must be ≥ 0")
	}
	return v, nil
}

// RegisterFlags defines one flag per key (--prompt-bs-bucket-min, …) that
// overrides it. Flags parsed after OverridesFromEnv win over the environment.
func (o *Overrides) RegisterFlags(fs *flag.FlagSet) {
	for _, k := range Keys() {
		usage := fmt.Sprintf("linear strategy: set the %s %s bucket %s to `n` (also $%s)",
			k.Phase, k.Dim, k.Param, k.EnvVar())
		fs.Var(overrideFlag{o, k}, k.Flag(), usage)
	}
}

// overrideFlag is the flag.Value of one key.
type overrideFlag struct {
	o *Overrides
	k Key
}

func (f overrideFlag) String() string {
	if f.o == nil {
		return ""
	}
	if v, ok := f.o.Get(f.k); ok {
		return strconv.Itoa(v)
	}
	return ""
}

func (f overrideFlag) Set(s string) error {
	v, err := parseOverride(s)
	if err != nil {
		return err
	}
	f.o.Set(f.k, v, "--"+f.k.Flag())
	return nil
}
