package main

import (
	"flag"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// serveFlagSet is serve's flag set with its help, as parseServe builds it.
func serveFlagSet(t *testing.T) (*flag.FlagSet, *helpFlag) {
	t.Helper()
	fs := newFlagSet("serve", io.Discard)
	var f serveFlags
	f.register(fs)
	h := helpOf(fs)
	h.groups = serveHelpGroups()
	return fs, h
}

// Every serve flag is on exactly one line of exactly one group, and no
// group names a flag serve does not have.
func TestServeHelpGroupsCoverEveryFlag(t *testing.T) {
	fs, h := serveFlagSet(t)
	count := map[string]int{}
	for _, g := range h.groups {
		for _, l := range g.lines {
			for _, n := range l.names {
				if fs.Lookup(n) == nil {
					t.Errorf("group %s names --%s, which serve does not have", g.key, n)
				}
				count[n]++
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !isHelpFlag(f.Name) && count[f.Name] != 1 {
			t.Errorf("--%s is in %d help lines, want 1", f.Name, count[f.Name])
		}
	})
	if g, ok := findGroup(h.groups, "vllm"); !ok || len(g.rows) != len(vllmFlags) || !g.hidden {
		t.Errorf("the vllm group has %d rows for %d vLLM flags (hidden %v)", len(g.rows), len(vllmFlags), g.hidden)
	}
}

// `pagoda serve --help`: groups in vLLM's order of concerns, double-dash
// names, one line per flag, each default once, sizes in binary units, no
// bucket --prefix-caching beside --enable-prefix-caching.
func TestServeHelpText(t *testing.T) {
	code, out, stderr := runCLI("serve", "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	headings := []string{"Model (vLLM's ModelConfig):", "Server (vLLM's Frontend):", "Structured outputs, tools and reasoning (vLLM's StructuredOutputsConfig):",
		"Scheduler (vLLM's SchedulerConfig):", "KV cache (vLLM's CacheConfig):", "Parallelism (vLLM's ParallelConfig):",
		"Step plans and shape buckets (vLLM's CompilationConfig):", "Logging (vLLM's ObservabilityConfig):"}
	at := -1
	for _, hd := range headings {
		i := strings.Index(out, "\n"+hd+"\n")
		if i <= at {
			t.Errorf("heading %q missing or out of order", hd)
		}
		at = i
	}
	for _, want := range []string{
		"\n  --port N ", "(default 8000)", "\n  --swap-space SIZE ", "(default 256MiB)", "(default 16MiB)",
		"\n  --tensor-parallel-size N ", "\n  --enable-prefix-caching, --no-enable-prefix-caching ",
		"\n  --uvicorn-log-level, --log-level LEVEL ", "\n  --{prompt,decode}-{bs,seq,block}-bucket-{min,step,max} N ",
		`(default ["*"])`, "--help=GROUP",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		switch {
		case regexp.MustCompile(`^\s+-[^-]`).MatchString(line):
			t.Errorf("line %d names a flag with one dash: %q", i, line)
		case strings.Count(line, "(default") > 1:
			t.Errorf("line %d states its default twice: %q", i, line)
		case strings.Contains(line, "--prefix-caching"), strings.Contains(line, "--trust-remote-code"):
			t.Errorf("line %d: %q (bucket's --prefix-caching, or the hidden vllm group)", i, line)
		}
	}
	if n := strings.Count(out, "\n  --"); n > 90 {
		t.Errorf("%d flag lines", n)
	}
}

// --help=TOPIC shows a group (by pagoda's or vLLM's name), a flag, the
// flags matching a word, the group list, or fails in one line.
func TestServeHelpTopics(t *testing.T) {
	for _, tc := range []struct {
		topic      string
		want, not  []string
		lines      int // flag lines, 0: not checked
		code       int
		wantStderr string
	}{
		{topic: "cache", want: []string{"KV cache (vLLM's CacheConfig):", "--block-size", "--kv-cache-memory SIZE"},
			not: []string{"--port", "usage:"}, lines: 6},
		{topic: "CacheConfig", want: []string{"--kv-cache-dtype"}, lines: 6},
		{topic: "--port", want: []string{"Server (vLLM's Frontend):", "--port N"}, lines: 1},
		{topic: "max-num-seqs", want: []string{"--max-num-seqs N"}, lines: 1},
		{topic: "prefill", want: []string{"--long-prefill-token-threshold", "--dbo-prefill-token-threshold",
			"--merged-prefill"}, not: []string{"--port"}},
		{topic: "listgroup", want: []string{"--help=model", "ModelConfig", "--help=vllm"}},
		{topic: "vllm", want: []string{"--trust-remote-code ", "refused: does not apply on CPU"}},
		{topic: "all", want: []string{"usage: pagoda serve", "--trust-remote-code", "--port N"}},
		{topic: "nothing", code: 2, wantStderr: "pagoda serve: --help=nothing names no group"},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			code, out, stderr := runCLI("serve", "--help="+tc.topic)
			if code != tc.code || !strings.Contains(stderr, tc.wantStderr) || (tc.wantStderr == "") != (stderr == "") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("has %q:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n  --"); tc.lines > 0 && n != tc.lines {
				t.Errorf("%d flag lines, want %d:\n%s", n, tc.lines, out)
			}
		})
	}
}

// Help wins wherever it is, also beside an unknown or refused flag, and
// goes to stdout with exit status 0.
func TestHelpAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--bogus", "-h"}, {"serve", "--gpu-memory-utilization", "0.9", "--help"},
		{"serve", "MODEL", "--help"}, {"generate", "--promtp", "x", "--help"}, {"pull", "org/repo", "--help"},
	} {
		code, out, stderr := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "usage: pagoda "+args[0]) || stderr != "" {
			t.Errorf("%q: exit %d, stdout %.40q, stderr %q", args, code, out, stderr)
		}
	}
}

// Every command and subcommand has a --help with a usage line and
// double-dash flag names.
func TestEveryCommandHelp(t *testing.T) {
	var lines [][]string
	for _, c := range commands() {
		switch c.name {
		case "bench":
			for _, b := range benchCommands() {
				lines = append(lines, []string{"bench", b.name})
			}
		case "model":
			lines = append(lines, []string{"model", "info"}, []string{"model", "synth"})
		case "version":
		default:
			lines = append(lines, []string{c.name})
		}
	}
	lines = append(lines, []string{"bench"}, []string{"model"}, []string{"help", "buckets"})
	for _, args := range lines {
		code, out, stderr := runCLI(append(slices.Clone(args), "--help")...)
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "usage: pagoda ") {
			t.Errorf("%q --help: exit %d, stderr %q, stdout %.60q", args, code, stderr, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if regexp.MustCompile(`^\s+-[^-]`).MatchString(line) {
				t.Errorf("%q --help: one-dash flag %q", args, line)
			}
		}
	}
	if code, out, _ := runCLI("--help"); code != 0 || !strings.Contains(out, "completion") {
		t.Errorf("pagoda --help: exit %d\n%s", code, out)
	}
}

// Flags and positional arguments come in any order; "--" ends the flags;
// a value that starts with "-" is taken by the flag before it.
func TestParseFlagsInterspersed(t *testing.T) {
	fs := newFlagSet("test", io.Discard)
	prompt := fs.String("prompt", "", "")
	n := fs.Int("n", 0, "")
	chat := fs.Bool("chat", false, "")
	err := parseFlags(fs, []string{"smollm2", "--prompt", "Hi", "x", "--n=-3", "--chat", "--", "--prompt"})
	if err != nil || *prompt != "Hi" || *n != -3 || !*chat || !slices.Equal(fs.Args(), []string{"smollm2", "x", "--prompt"}) {
		t.Fatalf("err %v, prompt %q, n %d, chat %v, args %q", err, *prompt, *n, *chat, fs.Args())
	}
	for args, want := range map[string]string{
		"--promtp x":  "unknown flag --promtp (did you mean --prompt?)",
		"--zzzzzz":    "unknown flag --zzzzzz (run `pagoda test --help` for the flags)",
		"--n x":       `invalid value "x" for flag --n`,
		"a --prompt":  "flag needs an argument: --prompt",
		"--chat=mayb": `invalid boolean value "mayb" for --chat`,
	} {
		fs := newFlagSet("test", io.Discard)
		fs.String("prompt", "", "")
		fs.Int("n", 0, "")
		fs.Bool("chat", false, "")
		err := parseFlags(fs, strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// `pagoda generate MODEL --prompt P` and `pagoda serve --port N MODEL
// --host H` read the flags after the model.
func TestModelBeforeFlags(t *testing.T) {
	code, stdout, stderr := runCLI("generate", testmodel.Stories(t), "--prompt", "Once upon a time", "--max-tokens", "4")
	if code != 0 || !strings.Contains(stderr, "generated: 4 tokens") || stdout == "" {
		t.Fatalf("generate MODEL --prompt: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI("generate", "a.gguf", "--model", "b.gguf", "--prompt", "x"); code != 2 ||
		!strings.Contains(stderr, "two models given") {
		t.Errorf("two models: exit %d, %s", code, stderr)
	}
	f, cfg, opts, err := parseConfig([]string{"--port", "9", "m.gguf", "--max_model_len", "64", "--served-model-name", "a", "b"}, nil)
	if err != nil || cfg.Model != "m.gguf" || f.port != 9 || cfg.MaxModelLen != 64 || !slices.Equal(opts.ServedModelNames, []string{"a", "b"}) {
		t.Errorf("serve: %v, model %q, port %d, len %d, names %q", err, cfg.Model, f.port, cfg.MaxModelLen, opts.ServedModelNames)
	}
	if _, _, _, err := parseConfig([]string{"a.gguf", "--port", "9", "b.gguf"}, nil); err == nil ||
		!strings.Contains(err.Error(), "one MODEL at most") {
		t.Errorf("two positional models: %v", err)
	}
	code, stdout, _ = runCLI("model", "info", testmodel.Stories(t), "--tensors")
	if code != 0 || !strings.Contains(stdout, "token_embd.weight") {
		t.Errorf("model info FILE --tensors: exit %d", code)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{256 << 20: "256MiB", 16 << 20: "16MiB", 2 << 30: "2GiB",
		3 << 29: "1536MiB", 1<<30 + 1: "1.0GiB", 1000: "1000", 4096: "4KiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
