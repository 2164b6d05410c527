package grammar

// keyRegion is the keys that match exactly the given patterns (among those of an object).
type keyRegion struct {
	keys     *rxDFA
	patterns []int
}

// patternRegions splits the keys of base that match some pattern by the set of patterns
// they match, so that each key takes exactly the schemas of its patterns. Beyond four
// patterns (fifteen regions) each pattern is its own region and takes the schemas of the
// patterns it overlaps too (exact false: stricter than the schema).
func patternRegions(base *rxDFA, pats []*rxDFA) ([]keyRegion, bool, error) {
	if len(pats) > 4 {
		var out []keyRegion
		for i, p := range pats {
			keys, err := base.and(p)
			if err != nil {
				return nil, false, err
			}
			r := keyRegion{keys: keys, patterns: []int{i}}
			for j, q := range pats {
				if j == i {
					continue
				}
				both, err := keys.and(q)
				if err != nil {
					return nil, false, err
				}
				if !both.empty() {
					r.patterns = append(r.patterns, j)
				}
			}
			if !keys.empty() {
				out = append(out, r)
			}
		}
		return out, false, nil
	}
	var out []keyRegion
	for set := 1; set < 1<<len(pats); set++ {
		keys := base
		var in []int
		var err error
		for i, p := range pats {
			if set&(1<<i) != 0 {
				in = append(in, i)
			} else {
				p = p.complement()
			}
			if keys, err = keys.and(p); err != nil {
				return nil, false, err
			}
		}
		if !keys.empty() {
			out = append(out, keyRegion{keys, in})
		}
	}
	return out, true, nil
}

// keyDFA is the automaton of the strings the schema s accepts (nil: every string).
func (c *conv) keyDFA(s *sch) (*rxDFA, error) {
	switch s.kind {
	case sAny:
		return nil, nil
	case sRef:
		t, err := c.expand(s.def)
		if err != nil {
			return nil, err
		}
		return c.keyDFA(t)
	case sLit:
		var words []string
		for _, v := range s.lits {
			if v.kind == 's' {
				words = append(words, v.str)
			}
		}
		return literalsDFA(words)
	case sUnion: // a ∪ b = ¬(¬a ∩ ¬b)
		acc := (&rxDFA{states: []rxState{{}}}).complement()
		for _, a := range s.alts {
			d, err := c.keyDFA(a)
			if err != nil {
				return nil, err
			}
			if d == nil {
				return nil, nil
			}
			if acc, err = acc.and(d.complement()); err != nil {
				return nil, err
			}
		}
		return acc.complement(), nil
	case sStr:
		return c.strDFA(s.str)
	}
	return &rxDFA{states: []rxState{{}}}, nil // no string
}

// strDFA is the automaton of the strings a string atom accepts.
func (c *conv) strDFA(s *strSch) (*rxDFA, error) {
	hi := s.maxLen
	if hi < 0 {
		hi = lenInf
	}
	d, err := dfaOf(anyString(s.minLen, hi))
	if err != nil {
		return nil, err
	}
	for _, p := range s.patterns {
		t, err := c.rx.parse(p)
		if err != nil {
			return nil, err
		}
		if d, err = andTree(d, searchWrap(t), false); err != nil {
			return nil, err
		}
	}
	for _, f := range s.formats {
		if d, err = andTree(d, c.rx.format(f), false); err != nil {
			return nil, err
		}
	}
	for _, p := range s.notPatterns {
		t, err := c.rx.parse(p)
		if err != nil {
			return nil, err
		}
		if d, err = andTree(d, searchWrap(t), true); err != nil {
			return nil, err
		}
	}
	if len(s.notIn) > 0 {
		l, err := literalsDFA(s.notIn)
		if err != nil {
			return nil, err
		}
		return d.and(l.complement())
	}
	return d, nil
}
