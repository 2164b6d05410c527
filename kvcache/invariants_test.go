package kvcache

import (
	"strings"
	"testing"
)

// TestCheckInvariantsDetects corrupts a healthy Manager in one way at a time
// and expects CheckInvariants to name the damage.
func TestCheckInvariantsDetects(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(m *Manager)
		want    string
	}{
		{"ref count", func(m *Manager) { m.device.blocks[0].ref++ }, "referenced by"},
		{"free counter", func(m *Manager) { m.device.numFree-- }, "counter says"},
		{"broken link", func(m *Manager) { m.device.blocks[m.device.head()].next = 3 }, "prev"},
		{"cycle", func(m *Manager) { m.device.blocks[5].next = 5 }, "broken"},
		{"bogus cache entry", func(m *Manager) { m.device.cached[12345] = 2 }, "without that hash"},
		{"token changed in a hashed block", func(m *Manager) { m.device.slots(1)[0]++ }, "chain gives"},
		{"token count", func(m *Manager) { m.device.blocks[2].numTokens++ }, "want 2"},
		{"table too long", func(m *Manager) { m.seqs[1].numTokens -= 4 }, "blocks for"},
		{"parent content id", func(m *Manager) { m.device.blocks[1].parent = 99 }, "parent content id"},
		{"host ref", func(m *Manager) { m.host.blocks[0].ref = 1 }, "host pool"},
		{"free hashed block not cached", func(m *Manager) {
			delete(m.device.cached, m.device.blocks[3].hash)
		}, "not cached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, NumHostBlocks: 2, EnablePrefixCaching: true})
			mustAllocate(t, m, 1, seq(0, 10), 0) // [0, 1, 2]
			mustAllocate(t, m, 2, seq(50, 5), 0) // [3, 4]
			mustFree(t, m, 2)                    // 3 free and cached, 4 free
			mustAllocate(t, m, 3, seq(90, 1), 0) // [4]
			tc.corrupt(m)
			err := m.CheckInvariants()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckInvariants = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
