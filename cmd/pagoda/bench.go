package main

import (
	"flag"
	"fmt"
	"io"
)

// benchCommands are the `pagoda bench` subcommands.
func benchCommands() []command {
	return []command{
		{"throughput", "offline throughput: N prompts submitted at once to the engine", runBenchThroughput},
		{"serve", "online serving benchmark against an OpenAI-compatible server", runBenchServe},
		{"ceilings", "machine ceilings: memory read bandwidth, FMA and int8 dot peaks on 1 and N threads", runBenchCeilings},
		{"plans", "captured step plans vs eager: warm-up time and memory per bucketing strategy, per-step overhead, GC cycles, padding", runBenchPlans},
		{"soak", "robustness soak: every request shape with client hang-ups and malformed bodies; fails on lost requests, 5xx, gauges not back to 0", runBenchSoak},
		{"latency", "llama-bench-like prefill/decode tokens/s and batched decode, as fractions of the ceilings", runBenchLatency},
		{"kld", "fidelity of the fast arithmetic: KL divergence and top-1 agreement of its logits with the exact (llama.cpp) arithmetic's over a text", runBenchKLD},
		{"structured", "JSON-schema-constrained vs free decoding: output tokens/s and grammar mask times", runBenchStructured},
	}
}

// runBench dispatches `pagoda bench <kind>`.
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("missing benchmark (want one of: %s)", benchNames())}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, "usage: pagoda bench <benchmark> [flags]\n\nbenchmarks:")
		for _, c := range benchCommands() {
			fmt.Fprintf(stdout, "  %-11s %s\n", c.name, c.summary)
		}
		fmt.Fprintln(stdout, "\nRun 'pagoda bench <benchmark> --help' for its flags.")
		return flag.ErrHelp
	}
	for _, c := range benchCommands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	return usageError{fmt.Errorf("unknown benchmark %q (want one of: %s)", args[0], benchNames())}
}

func benchNames() string {
	s := ""
	for i, c := range benchCommands() {
		if i > 0 {
			s += ", "
		}
		s += c.name
	}
	return s
}
