package nn

// Reserve grows the activation buffers for batches of up to numTokens
// tokens and numLogits logit rows (model.Reserver).
func (m *Model) Reserve(numTokens, numLogits int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s[0].size(m.local, len(m.ropes), numTokens, numLogits)
}
