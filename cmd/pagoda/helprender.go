package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"pagoda/server"
)

// maxNameColumn bounds the width of the flag-name column; a longer name
// pushes its text to the right on the same line.
const maxNameColumn = 36

// render returns the help for topic (see helpFlag): "" is the usage, the
// about text, every group not hidden, and how to ask for less. The topic
// has been checked (checkTopic).
func (h *helpFlag) render(fs *flag.FlagSet, topic string) string {
	groups := h.allGroups(fs)
	var b strings.Builder
	t := strings.ToLower(strings.TrimLeft(topic, "-"))
	switch t {
	case "", topicAll, topicPage:
		fmt.Fprintf(&b, "usage: %s\n", h.usage)
		if h.about != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(h.about, "\n"))
		}
		var shown []flagGroup
		for _, g := range groups {
			if t != "" || !g.hidden {
				shown = append(shown, g)
			}
		}
		writeGroups(&b, fs, shown)
		if len(groups) > 1 {
			fmt.Fprintf(&b, "\n%s\n", h.footer(groups))
		}
	case topicListGroup:
		for _, g := range groups {
			fmt.Fprintf(&b, "  --help=%-14s %-24s %s\n", g.key, g.vllm, g.title)
		}
	case topicComplete:
		writeCompletionSpec(&b, fs, groups)
	default:
		if g, ok := findGroup(groups, t); ok {
			writeGroups(&b, fs, []flagGroup{g})
		} else {
			writeGroups(&b, fs, matchingLines(groups, t))
		}
	}
	return b.String()
}

// footer says how to narrow the help.
func (h *helpFlag) footer(groups []flagGroup) string {
	var keys []string
	for _, g := range groups {
		keys = append(keys, g.key)
	}
	return "One group: --help=GROUP (" + strings.Join(keys, ", ") + ", or vLLM's name, e.g. --help=ModelConfig);\n" +
		"--help=FLAG or --help=WORD for the flags whose names contain WORD; --help=listgroup; --help=all."
}

// writeGroups writes each group's heading and lines, the name column as
// wide as the widest name (at most maxNameColumn).
func writeGroups(b *strings.Builder, fs *flag.FlagSet, groups []flagGroup) {
	rows := make([][][2]string, len(groups))
	width := 0
	for i, g := range groups {
		rows[i] = groupRows(fs, g)
		for _, r := range rows[i] {
			if n := len(r[0]); n <= maxNameColumn {
				width = max(width, n)
			}
		}
	}
	for i, g := range groups {
		heading := g.title
		if g.vllm != "" {
			heading += " (vLLM's " + g.vllm + ")"
		}
		fmt.Fprintf(b, "\n%s:\n", heading)
		for _, r := range rows[i] {
			fmt.Fprintf(b, "  %-*s  %s\n", width, r[0], r[1])
		}
	}
}

// groupRows is the (left column, text) of every line of g: the flags'
// names with two dashes and the first one's metavar, then its usage and
// default.
func groupRows(fs *flag.FlagSet, g flagGroup) [][2]string {
	var out [][2]string
	for _, l := range g.lines {
		f := fs.Lookup(l.names[0])
		if f == nil {
			continue // a pattern or table naming a flag this command lacks
		}
		left := l.show
		if left == "" {
			left = "--" + strings.Join(l.names, ", --")
			if mv := metavar(f); mv != "" {
				left += " " + mv
			}
		}
		text := l.text
		if text == "" {
			_, text = flag.UnquoteUsage(f)
			text += defaultText(f, text)
		}
		out = append(out, [2]string{left, text})
	}
	return append(out, g.rows...)
}

// metavar is what a flag's value is called in the help: the word the usage
// names in backquotes (as package flag reads it; upper-cased when it is a
// lower-case word), else one for its type (N for integers, SIZE, DURATION,
// LEVEL, LIST, JSON), else argparse's choice for vLLM: the last word of
// the flag's name, upper-cased (--host HOST, --chat-template TEMPLATE).
// A boolean flag has none.
func metavar(f *flag.Flag) string {
	if isBoolFlag(f) {
		return ""
	}
	name, _ := flag.UnquoteUsage(f)
	if strings.Count(f.Usage, "`") >= 2 {
		if name == strings.ToLower(name) && !strings.ContainsAny(name, "|,") {
			return strings.ToUpper(name)
		}
		return name
	}
	switch f.Value.(type) {
	case *server.SizeFlag:
		return "SIZE"
	case *secondsFlag:
		return "DURATION"
	case *logLevel:
		return "LEVEL"
	case *jsonList:
		return "LIST"
	case *nameList:
		return "NAME..."
	case *generationOverride:
		return "JSON"
	}
	switch name {
	case "int", "uint":
		return "N"
	case "duration":
		return "DURATION"
	}
	return strings.ToUpper(f.Name[strings.LastIndexByte(f.Name, '-')+1:])
}

// defaultText is " (default X)" unless the default is a zero value or the
// usage states it already; sizes are written in GiB, MiB or KiB.
func defaultText(f *flag.Flag, usage string) string {
	if strings.Contains(usage, "(default") {
		return ""
	}
	d := f.DefValue
	if _, ok := f.Value.(*server.SizeFlag); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n == 0 {
			return ""
		}
		d = formatSize(n)
	}
	switch d {
	case "", "0", "false", "[]", "0s":
		return ""
	}
	return " (default " + d + ")"
}

// formatSize writes n bytes as --kv-cache-memory and the other size flags
// read it: in the largest binary unit that keeps it a whole number, else
// in GiB or MiB with a fraction ("1.5GiB").
func formatSize(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	for _, u := range units[1:3] {
		if n >= u.size {
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// writeCompletionSpec lists a command's flags for `pagoda completion`: one
// line "flag NAME value|bool USAGE" per flag, then "group KEY" per help
// group.
func writeCompletionSpec(b *strings.Builder, fs *flag.FlagSet, groups []flagGroup) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "h" {
			return
		}
		kind := "value"
		if isBoolFlag(f) {
			kind = "bool"
		}
		_, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(b, "flag %s %s %s\n", f.Name, kind, strings.Join(strings.Fields(usage), " "))
	})
	if len(groups) > 1 {
		for _, g := range groups {
			fmt.Fprintf(b, "group %s\n", g.key)
		}
	}
}
