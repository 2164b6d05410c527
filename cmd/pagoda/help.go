package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Help is rendered here over the standard flag package rather than by a
// CLI library: the flag sets are shared with package bucket
// (Options.RegisterFlags) and server.ApplyEnv, and `pagoda serve` rewrites
// vLLM's command line (underscores, --served-model-name a b c) before
// parsing; a library would replace all three and still not know vLLM's
// --help=TOPIC. What it prints follows `vllm serve --help`: flags in named
// groups (vLLM's config classes), double-dash names, one line each, sizes
// in GiB/MiB, and --help=TOPIC to narrow it (vLLM: --help=ModelConfig,
// --help=max-num-seqs, --help=max, --help=listgroup, --help=all).

// helpLine is one line of help: the flags it names (a flag with its
// negation or alias, or every flag of a brace pattern) and, optionally, what
// it shows instead of their names and usage.
type helpLine struct {
	names []string // the flags on this line; the first one's usage and default are shown
	show  string   // the left column instead of "--a, --b METAVAR" ("" = that)
	text  string   // the text instead of the first flag's usage ("" = its usage and default)
}

// flagGroup is one titled group of a command's flags.
type flagGroup struct {
	key    string      // --help=KEY (lower case)
	vllm   string      // vLLM's name of the group, also accepted by --help= ("" = none)
	title  string      // the heading
	lines  []helpLine  // flags of the command's flag set
	rows   [][2]string // rows not backed by a flag (left column, text)
	hidden bool        // shown only by --help=KEY, --help=all
}

// flagLines makes one line per spec; a spec "a b" shows flags a and b on
// one line (a flag and its negation, or an alias).
func flagLines(specs ...string) []helpLine {
	out := make([]helpLine, len(specs))
	for i, s := range specs {
		out[i] = helpLine{names: strings.Fields(s)}
	}
	return out
}

// patternLine shows every flag a brace pattern ("{a,b}-x-{c,d}") expands to
// as one line.
func patternLine(pattern, metavar, text string) helpLine {
	return helpLine{names: expandBraces(pattern), show: "--" + pattern + " " + metavar, text: text}
}

// expandBraces expands each {x,y,…} of p, left to right: "{a,b}-{c,d}" is
// a-c, a-d, b-c, b-d.
func expandBraces(p string) []string {
	i := strings.IndexByte(p, '{')
	j := strings.IndexByte(p, '}')
	if i < 0 || j < i {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:j], ",") {
		for _, rest := range expandBraces(p[j+1:]) {
			out = append(out, p[:i]+alt+rest)
		}
	}
	return out
}

// Help topics besides groups and flags.
const (
	topicAll       = "all"        // every group, hidden ones too (vLLM's --help=all)
	topicPage      = "page"       // vLLM's pager view; the same as all here
	topicListGroup = "listgroup"  // the groups (vLLM's --help=listgroup)
	topicComplete  = "__complete" // machine-readable flags, for `pagoda completion`
)

// helpFlag is the -h/--help flag of every flag set newFlagSet makes, and it
// holds what the command's help says. It is a boolean flag that also takes
// a topic: --help=GROUP, --help=FLAG, --help=WORD (the flags whose names
// contain WORD), --help=listgroup or --help=all. Set only records the
// request; parseFlags prints the help, so it wins over any other flag's
// error on the same command line.
type helpFlag struct {
	out    io.Writer   // where the help goes (the command's stdout)
	usage  string      // the usage line, after "usage: "
	about  string      // paragraphs between the usage line and the flags
	groups []flagGroup // nil: every flag in one group, alphabetical
	asked  bool
	topic  string
}

func (h *helpFlag) String() string   { return "" }
func (h *helpFlag) IsBoolFlag() bool { return true }

// Set records --help (v "true") or --help=TOPIC; --help=false asks nothing.
func (h *helpFlag) Set(v string) error {
	h.asked = v != "false"
	if v != "true" && v != "false" {
		h.topic = v
	}
	return nil
}

// isHelpFlag reports whether name is the help flag of newFlagSet's sets.
func isHelpFlag(name string) bool { return name == "help" || name == "h" }

// newFlagSet returns the flag set of `pagoda NAME`: errors are returned,
// never printed by the flag package, and -h/--help[=TOPIC] prints the help
// to out.
func newFlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("pagoda "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	h := &helpFlag{out: out, usage: "pagoda " + name + " [flags]"}
	fs.Var(h, "help", "show this help; --help=TOPIC shows part of it")
	fs.Var(h, "h", "the same as --help")
	fs.Usage = func() {} // package flag calls it on errors, which parseFlags returns as one line
	return fs
}

// helpOf returns the help of a flag set made by newFlagSet, else nil.
func helpOf(fs *flag.FlagSet) *helpFlag {
	if f := fs.Lookup("help"); f != nil {
		h, _ := f.Value.(*helpFlag)
		return h
	}
	return nil
}

// show prints the help for the requested topic and returns flag.ErrHelp,
// or a usage error when the topic matches nothing.
func (h *helpFlag) show(fs *flag.FlagSet) error {
	if err := h.checkTopic(fs); err != nil {
		return usageError{err}
	}
	io.WriteString(h.out, h.render(fs, h.topic))
	return flag.ErrHelp
}

// allGroups is the command's groups, followed by "other flags" holding any
// flag no group names (none for a complete table; see the tests).
func (h *helpFlag) allGroups(fs *flag.FlagSet) []flagGroup {
	named := map[string]bool{}
	for _, g := range h.groups {
		for _, l := range g.lines {
			for _, n := range l.names {
				named[n] = true
			}
		}
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !named[f.Name] && !isHelpFlag(f.Name) {
			rest = append(rest, f.Name)
		}
	})
	groups := slices.Clone(h.groups)
	if len(rest) > 0 {
		title := "other flags"
		if len(groups) == 0 {
			title = "flags"
		}
		groups = append(groups, flagGroup{key: "other", title: title, lines: flagLines(rest...)})
	}
	return groups
}

// findGroup returns the group a topic names, by key or vLLM's name (any case).
func findGroup(groups []flagGroup, topic string) (flagGroup, bool) {
	for _, g := range groups {
		if strings.EqualFold(topic, g.key) || (g.vllm != "" && strings.EqualFold(topic, g.vllm)) {
			return g, true
		}
	}
	return flagGroup{}, false
}

// checkTopic reports a topic that names no group, no flag and no word of
// a flag's name.
func (h *helpFlag) checkTopic(fs *flag.FlagSet) error {
	t := strings.ToLower(strings.TrimLeft(h.topic, "-"))
	switch t {
	case "", topicAll, topicPage, topicListGroup, topicComplete:
		return nil
	}
	groups := h.allGroups(fs)
	if _, ok := findGroup(groups, t); ok {
		return nil
	}
	if len(matchingLines(groups, t)) > 0 {
		return nil
	}
	keys := make([]string, len(groups))
	for i, g := range groups {
		keys[i] = g.key
	}
	return fmt.Errorf("--help=%s names no group (%s) and no flag; --help=listgroup lists the groups",
		h.topic, strings.Join(keys, ", "))
}

// matchingLines returns, per group, the lines naming flag t exactly or,
// when none does, the lines with a flag whose name contains t.
func matchingLines(groups []flagGroup, t string) []flagGroup {
	for _, exact := range []bool{true, false} {
		var out []flagGroup
		for _, g := range groups {
			m := g
			m.lines, m.rows = nil, nil
			for _, l := range g.lines {
				if slices.ContainsFunc(l.names, func(n string) bool { return n == t || (!exact && strings.Contains(n, t)) }) {
					m.lines = append(m.lines, l)
				}
			}
			for _, r := range g.rows {
				if name := strings.Fields(r[0])[0]; name == "--"+t || (!exact && strings.Contains(name, t)) {
					m.rows = append(m.rows, r)
				}
			}
			if len(m.lines)+len(m.rows) > 0 {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}
