// Command pagoda runs and serves Llama-family GGUF models on CPUs.
//
//	pagoda serve [MODEL] [flags]           serve the OpenAI-compatible HTTP API
//	pagoda pull REF...                     download models (smollm2, gemma3, org/repo[:QUANT], org/repo/file.gguf)
//	pagoda list                            list the cached models
//	pagoda rm REF...                       delete cached models
//	pagoda generate [MODEL] --prompt P     generate text from one prompt
//	pagoda bench throughput --model M      offline throughput benchmark
//	pagoda buckets [flags]                 print the shape buckets of a configuration
//	pagoda model info M                    print a GGUF file's metadata and tensors
//	pagoda version                         print the version
//	pagoda completion bash|zsh|fish        print a shell completion script
//
// Flags and positional arguments may come in any order (parseFlags);
// --help on any command prints its flags (help.go).
//
// Every MODEL argument is a GGUF path or a reference that resolveModel
// turns into one (downloading it when it is not cached).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"pagoda/dist"
	_ "pagoda/model/archs" // registers every architecture
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "serve a model over the OpenAI-compatible HTTP API", runServe},
		{"generate", "generate text from one prompt", runGenerate},
		{"pull", "download models: smollm2, gemma3, org/repo[:QUANT], org/repo/file.gguf, hf.co/..., huggingface.co URLs", runPull},
		{"list", "list the cached models", runList},
		{"rm", "delete cached models", runRm},
		{"bench", "benchmarks: " + benchNames(), runBench},
		{"buckets", "print the shape buckets of a configuration", runBuckets},
		{"model", "inspect model files (model info FILE)", runModel},
		{"completion", "print a shell completion script: completion bash|zsh|fish", runCompletion},
		{"version", "print the version (and \"with Open MPI\" for a build with -tags mpi)", func(_ []string, stdout, _ io.Writer) error {
			if dist.MPIAvailable {
				fmt.Fprintln(stdout, "pagoda", version, "with Open MPI")
				return nil
			}
			fmt.Fprintln(stdout, "pagoda", version)
			return nil
		}},
	}
}

// usageError marks errors caused by bad command-line use (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stderr)
		return 2
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1:
		usage(stdout)
		return 0
	case args[0] == "help": // pagoda help serve: pagoda serve --help
		args = append(slices.Clone(args[1:]), "--help")
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "pagoda %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "pagoda %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "pagoda: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: pagoda <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'pagoda <command> --help' for a command's flags (flags and arguments in any order),\n"+
		"'pagoda completion bash|zsh|fish' for a shell completion script.")
}
