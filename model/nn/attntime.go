package nn

import (
	"time"

	"pagoda/kernels"
)

// attnTimer times the attention kernels of a forward pass
// (model.AttentionTimer).
type attnTimer struct {
	on   bool
	last time.Duration // the sum over the layers of the current or last forward pass
}

// TimeAttention turns the attention timer on or off (model.AttentionTimer).
func (m *Model) TimeAttention(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attnT = attnTimer{on: on}
}

// AttentionTime is the time the last forward pass spent in the attention
// kernels, 0 while the timer is off (model.AttentionTimer).
func (m *Model) AttentionTime() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.attnT.last
}

// timedAttention runs the attention of n tokens on its own between two
// clock reads and then, with project, the output projection s.xb = O·att:
// Pool.AttentionMatMul's work in two pool jobs, bit for bit the same.
func (m *Model) timedAttention(s *scratch, kv *kernels.KVLayer, wo kernels.Weight, n int, project bool) {
	t := time.Now()
	m.pool.Attention(&s.attn, kv)
	m.attnT.last += time.Since(t)
	if project {
		m.pool.MatMul(s.xb, wo, s.att, n)
	}
}
