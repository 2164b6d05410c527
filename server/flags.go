package server

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes ParseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a byte size: plain bytes ("1048576"), or a number with a
// unit: KiB, MiB, GiB, TiB (powers of 1024), KB, MB, GB, TB (powers of
// 1000), or K, M, G, T (as KiB...). Fractions are allowed ("1.5GiB").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with KiB, MiB, GiB, KB, MB, GB)", s)
	}
	return int64(math.Round(v * mult)), nil
}

// formatBytes writes n in the largest binary unit that keeps it ≥ 1.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', -1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', -1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// SizeFlag is a flag.Value holding a byte size written as ParseSize reads it.
type SizeFlag int64

func (f *SizeFlag) String() string { return strconv.FormatInt(int64(*f), 10) }

// Set parses a size.
func (f *SizeFlag) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*f = SizeFlag(v)
	return nil
}

// EnvName is the environment variable of a flag: PAGODA_ and the flag name
// in upper case with dashes as underscores (--max-num-seqs: PAGODA_MAX_NUM_SEQS).
func EnvName(flagName string) string {
	return "PAGODA_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag of fs whose environment variable (EnvName) is
// set, as lookup reports it. Call it before fs.Parse, so that flags on the
// command line win over the environment.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil {
			return
		}
		name := EnvName(f.Name)
		if v, ok := lookup(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	})
	return err
}
