package tokenizer

// StopMatcher watches streamed text for stop strings. It releases text only once no stop
// string can begin in it: the tail of the text that is a prefix of some stop string is held
// back until later text rules the stop string in or out. So released text never contains any
// part of a stop string that matches, however the stop string is split across tokens (unless
// IncludeStop asks for the stop string itself).
//
// Matching is incremental: one Aho-Corasick automaton (StopSet) over all stop strings reads
// each pushed byte once, so a push costs O(len(text)) whatever the number and length of the
// stop strings. The stop string that matches is the first to be completed in the text (the
// longest, when several end at the same byte); this does not depend on how the text is split
// into pushes.
//
// Invariant: released text + held-back text == all pushed text, up to and excluding the
// match (or including it, with IncludeStop); the held-back text is the automaton's depth: the
// longest suffix of the pushed text that is a proper prefix of a stop string.
type StopMatcher struct {
	set         *StopSet
	includeStop bool
	state       int32  // automaton node after all pushed bytes
	held        []byte // pushed text not released yet (len == depth of state)
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
	return NewStopSet(stops).Matcher(includeStop)
}

// Matcher returns a new matcher over the set's stop strings. Matchers share the set, which is
// immutable.
func (s *StopSet) Matcher(includeStop bool) *StopMatcher {
	return &StopMatcher{set: s, includeStop: includeStop}
}

// Push adds text and returns the text that may now be released. Once a stop string has
// matched, stopped is true and the text after the match is discarded; later calls return
// ("", true).
func (m *StopMatcher) Push(text string) (out string, stopped bool) {
	if m.stopped {
		return "", true
	}
	if len(m.set.nodes) <= 1 {
		m.released += len(text)
		return text, false
	}
	start := m.released + len(m.held) // offset of text[0] in all pushed text
	for i := 0; i < len(text); i++ {
		m.state = m.set.next(m.state, text[i])
		idx := m.set.nodes[m.state].out
		if idx < 0 {
			continue
		}
		stop := m.set.stops[idx]
		at := start + i + 1 - len(stop) // offset of the match
		m.stopped = true
		m.match = StopMatch{Stop: stop, Index: int(idx), Offset: at}
		end := at
		if m.includeStop {
			end += len(stop)
		}
		all := append(m.held, text[:i+1]...)
		out := string(all[:end-m.released])
		m.held, m.released = nil, end
		return out, true
	}
	m.held = append(m.held, text...)
	keep := int(m.set.nodes[m.state].depth)
	out = string(m.held[:len(m.held)-keep])
	m.held = append(m.held[:0], m.held[len(m.held)-keep:]...)
	m.released += len(out)
	return out, false
}

// Flush releases the held-back text at the end of the stream (when no stop string matched).
func (m *StopMatcher) Flush() string {
	out := string(m.held)
	m.held = m.held[:0]
	m.released += len(out)
	return out
}

// Match returns the matched stop string, if any.
func (m *StopMatcher) Match() (StopMatch, bool) { return m.match, m.stopped }
