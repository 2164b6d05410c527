package hub

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// DefaultQuants are tried in order when a reference gives no quantization,
// as llama.cpp's -hf does; after them, the first model file of the repo.
var DefaultQuants = []string{"Q4_K_M", "Q8_0"}

var splitName = regexp.MustCompile(`(?i)^(.+)-([0-9]{5})-of-([0-9]{5})\.gguf$`)

// Split describes a file of a split GGUF (name-00001-of-00003.gguf): the
// name before the index, its 1-based index and the number of parts. A file
// that is not split has Index = Count = 1.
type Split struct {
	Prefix       string
	Index, Count int
}

// SplitOf parses a file name; names that do not match the split pattern
// (or have a zero index or count, or an index past the count) are one
// whole file.
func SplitOf(file string) Split {
	m := splitName.FindStringSubmatch(file)
	if m == nil {
		return Split{Prefix: strings.TrimSuffix(file, path.Ext(file)), Index: 1, Count: 1}
	}
	i, _ := strconv.Atoi(m[2])
	n, _ := strconv.Atoi(m[3])
	if i < 1 || n < 1 || i > n {
		return Split{Prefix: strings.TrimSuffix(file, path.Ext(file)), Index: 1, Count: 1}
	}
	return Split{Prefix: m[1], Index: i, Count: n}
}

// Parts is every file of the split set file belongs to, first part first;
// just file when it is not split. The names follow from file's name.
func Parts(file string) []string {
	s := SplitOf(file)
	if s.Count == 1 {
		return []string{file}
	}
	out := make([]string, s.Count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d-of-%05d.gguf", s.Prefix, i+1, s.Count)
	}
	return out
}

// isModel reports whether a repo file is a model GGUF: it ends in .gguf and
// its base name names neither a multimodal projector (mmproj) nor an
// importance matrix (imatrix).
func isModel(file string) bool {
	base := strings.ToLower(path.Base(file))
	return strings.HasSuffix(base, ".gguf") && !strings.Contains(base, "mmproj") && !strings.Contains(base, "imatrix")
}

// Select picks the file of a repo listing that a quantization names, as
// llama.cpp's -hf does: the first model GGUF whose path contains the quant
// followed by '.' or '-' (case-insensitive), skipping parts of a split set
// other than the first. With no quant, DefaultQuants are tried in order,
// then the first model GGUF. The error lists the repo's GGUF files.
func Select(files []string, quant string) (string, error) {
	tags := DefaultQuants
	if quant != "" {
		tags = []string{quant}
	}
	for _, t := range tags {
		re := regexp.MustCompile("(?i)" + regexp.QuoteMeta(t) + "[.-]")
		for _, f := range files {
			if isModel(f) && SplitOf(f).Index == 1 && re.MatchString(f) {
				return f, nil
			}
		}
	}
	if quant == "" {
		for _, f := range files {
			if isModel(f) && SplitOf(f).Index == 1 {
				return f, nil
			}
		}
	}
	var ggufs []string
	for _, f := range files {
		if strings.HasSuffix(strings.ToLower(f), ".gguf") {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) == 0 {
		return "", fmt.Errorf("no GGUF file in the repo")
	}
	return "", fmt.Errorf("no GGUF model file matches %q; the repo has: %s", quant, strings.Join(ggufs, ", "))
}
