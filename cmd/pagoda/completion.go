package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"pagoda/engine"
	"pagoda/server"
)

// runCompletion implements `pagoda completion bash|zsh|fish`: a script
// that completes the commands, the subcommands of bench and model, each
// command's flags (read from its own flag set, so the script is never out
// of date with the binary that wrote it), --help=GROUP, the values of the
// flags that take one of a few words, and model arguments (the named
// models and *.gguf files).
func runCompletion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("completion", stdout)
	h := helpOf(fs)
	h.usage = "pagoda completion bash|zsh|fish"
	h.about = "Prints a shell completion script. Load it into the running shell:\n" +
		"  bash: source <(pagoda completion bash)     zsh: source <(pagoda completion zsh)\n" +
		"  fish: pagoda completion fish | source\n" +
		"or install it for every shell:\n" +
		"  bash: pagoda completion bash > ~/.local/share/bash-completion/completions/pagoda\n" +
		"  zsh:  pagoda completion zsh > \"${fpath[1]}/_pagoda\"\n" +
		"  fish: pagoda completion fish > ~/.config/fish/completions/pagoda.fish"
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{fmt.Errorf("want one shell: bash, zsh or fish")}
	}
	cmds, err := completionSpecs()
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "bash":
		writeBash(stdout, cmds)
	case "zsh":
		writeZsh(stdout, cmds)
	case "fish":
		writeFish(stdout, cmds)
	default:
		return usageError{fmt.Errorf("unknown shell %q (want bash, zsh or fish)", fs.Arg(0))}
	}
	return nil
}

// cmdSpec is what the completion scripts know of a command: its flags and
// help groups, or its subcommands.
type cmdSpec struct {
	name    string // "serve", or a subcommand's own name ("throughput")
	summary string
	flags   []flagSpec
	groups  []string  // --help=GROUP keys
	subs    []cmdSpec // bench's and model's subcommands
	models  bool      // its positional arguments are models
}

// flagSpec is one flag of a command.
type flagSpec struct {
	name    string
	usage   string
	value   bool     // takes a value
	choices []string // the words its value may be; nil: any (files are offered)
}

// modelCommands are the subcommands of `pagoda model`.
var modelCommands = []command{
	{"info", "print a GGUF file's metadata and tensors", nil},
	{"synth", "write a GGUF of random weights at a real model's shape", nil},
}

// takesModels are the commands whose positional arguments are models.
var takesModels = map[string]bool{"serve": true, "generate": true, "pull": true, "rm": true, "model info": true}

// flagChoices are the values of the flags that take one of a few words.
func flagChoices() map[string][]string {
	return map[string][]string{
		"kv-cache-dtype":     {"auto", "f16", "f32", "bf16", "q8_0"},
		"preemption-mode":    {"auto", "recompute", "swap"},
		"bucketing-strategy": {"exponential", "linear"},
		"dtype":              {"auto", "float32", "float"},
		"generation-config":  {"auto", "vllm"},
		"uvicorn-log-level":  logLevelNames,
		"log-level":          logLevelNames,
		"tool-call-parser":   server.ToolCallParsers(),
		"reasoning-parser":   server.ReasoningParsers(),
		"pooling":            engine.Poolings(),
		"model":              modelNames(),
	}
}

// modelNames are the named models' short names.
func modelNames() []string { return strings.Split(namedRefs(), ", ") }

// completionSpecs asks every command for its flags (--help=__complete, which
// prints them without running the command).
func completionSpecs() ([]cmdSpec, error) {
	var out []cmdSpec
	for _, c := range commands() {
		s := cmdSpec{name: c.name, summary: c.summary}
		var err error
		switch c.name {
		case "bench":
			s.subs, err = subSpecs(c.name, benchCommands(), func(args []string, o io.Writer) error { return runBench(args, o, io.Discard) })
		case "model":
			s.subs, err = subSpecs(c.name, modelCommands, func(args []string, o io.Writer) error { return runModel(args, o, io.Discard) })
		case "version":
		default:
			err = readSpec(&s, func(o io.Writer) error { return c.run([]string{"--help=" + topicComplete}, o, io.Discard) })
		}
		if err != nil {
			return nil, err
		}
		s.models = takesModels[c.name]
		out = append(out, s)
	}
	return out, nil
}

// subSpecs reads the specs of parent's subcommands through run.
func subSpecs(parent string, subs []command, run func(args []string, o io.Writer) error) ([]cmdSpec, error) {
	out := make([]cmdSpec, len(subs))
	for i, c := range subs {
		out[i] = cmdSpec{name: c.name, summary: c.summary, models: takesModels[parent+" "+c.name]}
		if err := readSpec(&out[i], func(o io.Writer) error {
			return run([]string{c.name, "--help=" + topicComplete}, o)
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readSpec runs a command's --help=__complete and reads its lines ("flag
// NAME value|bool USAGE", "group KEY") into s.
func readSpec(s *cmdSpec, run func(o io.Writer) error) error {
	var buf bytes.Buffer
	if err := run(&buf); err != nil && !errors.Is(err, flag.ErrHelp) {
		return fmt.Errorf("completion: reading the flags of %s: %w", s.name, err)
	}
	choices := flagChoices()
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		switch {
		case len(f) == 4 && f[0] == "flag":
			fl := flagSpec{name: f[1], value: f[2] == "value", usage: f[3]}
			if fl.value {
				fl.choices = choices[fl.name]
			}
			s.flags = append(s.flags, fl)
		case len(f) == 2 && f[0] == "group":
			s.groups = append(s.groups, f[1])
		}
	}
	return nil
}

// summaryText is a one-line description safe inside any shell's single
// quotes and zsh's _describe and _arguments specs.
func summaryText(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\'', '"', '`', '$', '\\', '[', ']', ':', '\n':
			return -1
		}
		return r
	}, s)
	if len(s) > 70 {
		s = strings.TrimSpace(s[:67]) + "..."
	}
	return s
}
