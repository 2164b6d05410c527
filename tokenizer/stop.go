package tokenizer

import "strings"

// StopMatcher watches streamed text for stop strings. It releases text only once no stop
// string can begin in it: the tail of the text that is a prefix of some stop string is held
// back until later text rules the stop string in or out. So released text never contains any
// part of a stop string that matches, however the stop string is split across tokens (unless
// IncludeStop asks for the stop string itself).
//
// Invariant: released text + held-back text == all pushed text, up to and excluding the
// match (or including it, with IncludeStop).
type StopMatcher struct {
	stops       []string
	includeStop bool
	held        string // pushed text not released yet; never contains a complete stop string
	released    int    // bytes released so far
	match       StopMatch
	stopped     bool
}

// StopMatch describes a matched stop string.
type StopMatch struct {
	Stop   string // the stop string that matched
	Index  int    // which of the configured stop strings
	Offset int    // byte offset of the match in the concatenation of all pushed text
}

// NewStopMatcher watches for stops (empty strings are ignored). With includeStop, the matched
// stop string is part of the released text (vLLM's include_stop_str_in_output).
func NewStopMatcher(stops []string, includeStop bool) *StopMatcher {
	m := &StopMatcher{includeStop: includeStop}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// Push adds text and returns the text that may now be released. Once a stop string has
// matched, stopped is true and the text after the match is discarded; later calls return
// ("", true).
func (m *StopMatcher) Push(text string) (out string, stopped bool) {
	if m.stopped {
		return "", true
	}
	buf := m.held + text
	if i, s := m.earliest(buf); s >= 0 {
		m.stopped = true
		m.match = StopMatch{Stop: m.stops[s], Index: s, Offset: m.released + i}
		end := i
		if m.includeStop {
			end += len(m.stops[s])
		}
		m.held = ""
		m.released += end
		return buf[:end], true
	}
	keep := m.partialTail(buf)
	out, m.held = buf[:len(buf)-keep], buf[len(buf)-keep:]
	m.released += len(out)
	return out, false
}

// Flush releases the held-back text at the end of the stream (when no stop string matched).
func (m *StopMatcher) Flush() string {
	out := m.held
	m.held = ""
	m.released += len(out)
	return out
}

// Match returns the matched stop string, if any.
func (m *StopMatcher) Match() (StopMatch, bool) { return m.match, m.stopped }

// earliest finds the stop string occurring first in buf (the longest on a tie) and returns its
// position and index, or (-1, -1).
func (m *StopMatcher) earliest(buf string) (pos, idx int) {
	pos, idx = -1, -1
	for i, s := range m.stops {
		j := strings.Index(buf, s)
		if j < 0 {
			continue
		}
		if idx < 0 || j < pos || (j == pos && len(s) > len(m.stops[idx])) {
			pos, idx = j, i
		}
	}
	return pos, idx
}

// partialTail is the length of the longest suffix of buf that is a proper prefix of a stop
// string (such a suffix starts on a character boundary, since stop strings are whole text).
func (m *StopMatcher) partialTail(buf string) int {
	best := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(buf)); k > best; k-- {
			if strings.HasSuffix(buf, s[:k]) {
				best = k
				break
			}
		}
	}
	return best
}
