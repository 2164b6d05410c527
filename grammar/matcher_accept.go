package grammar

import (
	"fmt"
	"slices"
)

// Accept advances m by token id. A token not allowed next (its bit clear in FillMask) is an
// error and leaves m unchanged. An end-of-generation token is allowed exactly when CanEnd; it
// terminates m, after which only end-of-generation tokens are accepted.
func (m *Matcher) Accept(id int32) error {
	v := m.c.v
	if id < 0 || int(id) >= len(v.pieces) {
		return fmt.Errorf("grammar: token %d out of range (vocabulary of %d)", id, len(v.pieces))
	}
	if v.isEOG[id] {
		if !m.CanEnd() && !m.terminated {
			return fmt.Errorf("grammar: end of generation (token %d) before the grammar is complete", id)
		}
		m.terminated = true
		return nil
	}
	if m.terminated {
		return fmt.Errorf("grammar: token %d after the end of generation", id)
	}
	piece := v.pieces[id]
	if piece == "" {
		return fmt.Errorf("grammar: token %d is never allowed (special or empty)", id)
	}
	c := m.c
	c.enter(m)
	defer c.mu.Unlock()
	set, sid, counted, failed, err := c.runLimited(m, piece)
	if err != nil {
		return err
	}
	if failed >= 0 {
		return fmt.Errorf("grammar: token %d (%q) not allowed here: byte %d does not fit", id, piece, failed)
	}
	m.set = append(m.set[:0], set...)
	m.counted, m.sid = counted, sid
	return nil
}

// Allows reports whether Accept(id) would succeed, without changing m (a sampler can check
// its choice first and fill the mask only when the choice is refused).
func (m *Matcher) Allows(id int32) bool {
	v := m.c.v
	switch {
	case id < 0 || int(id) >= len(v.pieces):
		return false
	case v.isEOG[id]:
		return m.terminated || m.CanEnd()
	case m.terminated || v.pieces[id] == "":
		return false
	}
	c := m.c
	c.enter(m)
	defer c.mu.Unlock()
	_, _, _, failed, err := c.runLimited(m, v.pieces[id])
	return err == nil && failed < 0
}

// run follows piece's bytes from m's stacks (c locked, m entered): through the cache's
// transitions while the stacks hold no exact counter, and by advancing the stacks directly
// while they do (their states would be one per count; the cache keeps their abstract
// forms instead). It returns the stacks after piece (in c's buffers: copy them), their
// state (-1 when counted) and whether they are counted, or the index of the byte no stack
// survives (failed ≥ 0).
// runLimited is run within MaxStepWork work units.
func (c *Compiled) runLimited(m *Matcher, piece string) (set []int32, sid int32, counted bool, failed int, err error) {
	defer catchLimit(&err)
	c.setFuel(MaxStepWork, stepWork)
	set, sid, counted, failed = c.run(m, piece)
	return set, sid, counted, failed, nil
}

func (c *Compiled) run(m *Matcher, piece string) (set []int32, sid int32, counted bool, failed int) {
	set, counted, sid = m.set, m.counted, -1
	if !counted {
		sid = m.sid
	}
	buf := 0
	for i := 0; i < len(piece); i++ {
		if !counted {
			if sid = c.step(sid, piece[i]); sid < 0 {
				return nil, -1, false, i
			}
			if st := c.states[sid]; st.counted {
				set, counted, sid = st.set, true, -1
			}
			continue
		}
		out := c.advance(set, piece[i], c.runBuf[buf][:0])
		c.runBuf[buf] = out
		buf ^= 1
		if len(out) == 0 {
			return nil, -1, false, i
		}
		slices.Sort(out)
		set = out
		if !c.anyCounted(set) {
			sid, counted = c.stateOf(set), false
		}
	}
	if !counted {
		set = c.states[sid].set
	}
	return set, sid, counted, -1
}
