package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"pagoda/gguf"
)

// runModel implements `pagoda model info FILE` and `pagoda model synth`.
func runModel(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("missing subcommand (want: info FILE, synth)")}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: pagoda model info MODEL [--tensors] | pagoda model synth [flags]\n\n"+
			"  info   print a GGUF file's metadata and tensors\n  synth  write a GGUF of random weights at a real model's shape\n\n"+
			"Run 'pagoda model info --help' or 'pagoda model synth --help' for their flags.")
		return flag.ErrHelp
	case "synth":
		return runModelSynth(args[1:], stdout, stderr)
	case "info":
		fs := newFlagSet("model info", stdout)
		helpOf(fs).usage = "pagoda model info MODEL [--tensors]"
		tensors := fs.Bool("tensors", false, "list every tensor")
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageError{fmt.Errorf("want exactly one GGUF file or model reference, got %d arguments", fs.NArg())}
		}
		path, err := resolveModel(fs.Arg(0), stderr)
		if err != nil {
			return err
		}
		return modelInfo(path, *tensors, stdout)
	}
	return usageError{fmt.Errorf("unknown subcommand %q (want: info, synth)", args[0])}
}

func modelInfo(path string, listTensors bool, w io.Writer) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(w, "file: %s\nGGUF version: %d, alignment %d, data offset %d\n", path, f.Version, f.Alignment, f.DataOffset)
	fmt.Fprintf(w, "metadata (%d keys):\n", len(f.KV))
	for _, kv := range f.KV {
		fmt.Fprintf(w, "  %-45s %s\n", kv.Key, describeValue(kv.Value))
	}
	counts := map[string]int{}
	var params int64
	for _, t := range f.Tensors {
		counts[t.Type.String()]++
		params += int64(t.NumElements())
	}
	types := make([]string, 0, len(counts))
	for t, n := range counts {
		types = append(types, fmt.Sprintf("%s×%d", t, n))
	}
	sort.Strings(types)
	fmt.Fprintf(w, "tensors: %d (%s), %.1fM parameters\n", len(f.Tensors), strings.Join(types, ", "), float64(params)/1e6)
	if listTensors {
		for _, t := range f.Tensors {
			fmt.Fprintf(w, "  %-32s %-5s %v\n", t.Name, t.Type, t.Dims)
		}
	}
	return nil
}

// describeValue prints scalars in full and arrays by type and length.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 60 {
			return fmt.Sprintf("%q… (%d bytes)", x[:60], len(x))
		}
		return fmt.Sprintf("%q", x)
	case []string:
		return fmt.Sprintf("[%d strings]", len(x))
	case []float32:
		return fmt.Sprintf("[%d float32]", len(x))
	case []int32:
		return fmt.Sprintf("[%d int32]", len(x))
	case []any:
		return fmt.Sprintf("[%d arrays]", len(x))
	}
	s := fmt.Sprint(v)
	if len(s) > 80 {
		return fmt.Sprintf("%T of %d", v, len(s))
	}
	return s
}
