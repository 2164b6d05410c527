package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// parseFlags parses a command line whose flags and positional arguments
// come in any order, as argparse (vLLM) and GNU getopt read them:
// `pagoda generate smollm2 --prompt Hi` is `pagoda generate --prompt Hi
// smollm2`. A flag that takes a value takes the next argument (or
// --flag=value); "--" ends the flags. -h/--help[=TOPIC] anywhere prints
// the help and returns flag.ErrHelp, even beside a bad flag. Other errors
// are usage errors naming the flag with two dashes. Afterwards fs.Args()
// are the positional arguments, in order.
func parseFlags(fs *flag.FlagSet, args []string) error {
	flags, positional, err := splitArgs(fs, args)
	if h := helpOf(fs); h != nil && h.asked {
		return h.show(fs)
	}
	if err != nil {
		return usageError{err}
	}
	if err := fs.Parse(append(append(flags, "--"), positional...)); err != nil {
		return usageError{dashedFlagError(err)}
	}
	return nil
}

// splitArgs separates args into flags (with their values) and positional
// arguments, keeping each in order. The help flag is set here, so that it
// is seen even when the line has an error; the error returned is the first
// unknown flag.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil:
			if err == nil {
				err = unknownFlagError(fs, name, nil)
			}
		case isHelpFlag(name):
			if !hasValue {
				value = "true"
			}
			f.Value.Set(value)
		case hasValue || isBoolFlag(f):
			flags = append(flags, a)
		case i+1 < len(args):
			flags = append(flags, a, args[i+1])
			i++
		case err == nil:
			err = fmt.Errorf("flag needs an argument: --%s", name)
		}
	}
	return flags, positional, err
}

// dashedFlagError rewrites package flag's messages, which name a flag with
// one dash ("invalid value "x" for flag -port"), with the two dashes the
// help and the README use.
func dashedFlagError(err error) error {
	r := strings.NewReplacer("for flag -", "for flag --", " for -", " for --",
		"argument: -", "argument: --", "not defined: -", "not defined: --")
	return errors.New(r.Replace(err.Error()))
}

// isBoolFlag reports whether f takes no value (--flag alone sets it).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// unknownFlagError names the flag and, when one is close enough, the known
// flag (of fs, or among extra) nearest to it in edit distance.
func unknownFlagError(fs *flag.FlagSet, name string, extra []string) error {
	known := []string{}
	fs.VisitAll(func(f *flag.Flag) {
		if !isHelpFlag(f.Name) {
			known = append(known, f.Name)
		}
	})
	known = append(known, extra...)
	best, bestD := "", len(name)/2+2 // farther than this is no suggestion
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return fmt.Errorf("unknown flag --%s (run `%s --help` for the flags)", name, fs.Name())
	}
	return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, best)
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
