package kvcache

import (
	"errors"
	"fmt"
)

// Sentinel errors. Returned errors wrap them with the sequence id or the
// sizes involved; test with errors.Is.
var (
	ErrNoFreeBlocks       = errors.New("kvcache: not enough free device blocks")
	ErrNoSwapSpace        = errors.New("kvcache: not enough free host blocks")
	ErrUnknownSequence    = errors.New("kvcache: unknown sequence")
	ErrSequenceExists     = errors.New("kvcache: sequence already has a block table")
	ErrSwappedOut         = errors.New("kvcache: sequence is swapped out")
	ErrNotSwappedOut      = errors.New("kvcache: sequence is not swapped out")
	ErrDuplicateSequence  = errors.New("kvcache: sequence listed twice")
	ErrPositionOutOfRange = errors.New("kvcache: token position out of range")
)

// BlockHash is the chained hash of a full block: xxhash64 over the parent
// block's hash (8 bytes, little endian) and the block's token ids (4 bytes
// each, little endian). A sequence's first block chains from 0.
type BlockHash uint64

// Copy asks the runner to copy every slot of device block Src into device
// block Dst (copy-on-write of a shared partial block).
type Copy struct{ Src, Dst int32 }

// Swap asks the runner to copy a block between pools: device Src → host Dst
// for SwapOut, host Src → device Dst for SwapIn.
type Swap struct{ Src, Dst int32 }

// AllocStatus answers CanAllocate.
type AllocStatus int

const (
	AllocOK    AllocStatus = iota // Allocate would succeed now
	AllocLater                    // not enough free blocks now; retry after others finish
	AllocNever                    // needs more blocks than the device pool has
)

func (s AllocStatus) String() string {
	switch s {
	case AllocOK:
		return "ok"
	case AllocLater:
		return "later"
	case AllocNever:
		return "never"
	}
	return fmt.Sprintf("AllocStatus(%d)", int(s))
}

// Config sizes a Manager. It is validated once by New.
type Config struct {
	BlockSize           int  // tokens per block, ≥ 1 (typically 16 or 128)
	NumBlocks           int  // device blocks, ≥ 1
	NumHostBlocks       int  // host swap blocks, ≥ 0
	EnablePrefixCaching bool // hash full blocks and reuse them across sequences
	// Windows lists the KV cache groups (vLLM's hybrid KV cache manager): one
	// entry per group, the sliding window of its layers in positions, 0 for
	// full attention. Every group has its own block table per sequence, and
	// all share the pools. Empty: one full-attention group.
	Windows []int
}

// Stats counts prefix-cache activity since New. A query is one Allocate
// with prefix caching on.
type Stats struct {
	Queries     int64 // Allocate calls that looked up the cache
	QueryBlocks int64 // full leading blocks looked up (a prompt's last token is never looked up)
	HitBlocks   int64 // blocks reused from the cache
	QueryTokens int64 // prompt tokens of the queries
	HitTokens   int64 // prompt tokens whose KV was found in the cache
	Evictions   int64 // cached hashes forgotten because their free block was reused
}

// HitRate is HitTokens / QueryTokens, 0 before any query.
func (s Stats) HitRate() float64 {
	if s.QueryTokens == 0 {
		return 0
	}
	return float64(s.HitTokens) / float64(s.QueryTokens)
}

// NullBlock stands in a sliding-window group's table for a block that fell
// out of the sequence's window: released, never read again.
const NullBlock int32 = -1

// seqState is one sequence's block tables, one per KV group.
type seqState struct {
	tables    [][]int32 // per group: logical block → physical block id (host pool when onHost), or NullBlock
	chain     []link    // per group: the hash chain the next full block continues
	numTokens int       // tokens with a reserved slot
	spec      int       // of them, trailing proposals not yet settled (AppendSpeculative)
	onHost    bool
}

// link is the hash and content id of a sequence's last full block in a
// group (root: the group's root hash and content id 0).
type link struct {
	hash BlockHash
	cid  uint64
}

// Manager maps sequences to blocks of a device pool and a host swap pool.
// See the package documentation for the layout and the invariants.
type Manager struct {
	blockSize int
	windows   []int // per KV group: sliding window in positions, 0 for full attention
	device    *Pool
	host      *Pool
	seqs      map[int64]*seqState
	spare     []*seqState                                      // freed tables, reused by Allocate and Fork
	hashFn    func(parent BlockHash, tokens []int32) BlockHash // tests inject colliding hashes
	nextCID   uint64                                           // next content id; ids start at 1
	round     uint64                                           // the scheduling round (BeginRound)
	stats     Stats
	hits      [][]int32 // scratch (group, blocks): prefix-cache hits of the current Allocate
	remap     []int32   // scratch (max(NumBlocks, NumHostBlocks)): source block → destination during a swap
	touched   []int32   // scratch: source blocks whose remap entry is set
}

// New validates cfg and returns an empty Manager: every block free.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.BlockSize < 1:
		return nil, fmt.Errorf("kvcache: BlockSize must be ≥ 1, got %d", cfg.BlockSize)
	case cfg.NumBlocks < 1:
		return nil, fmt.Errorf("kvcache: NumBlocks must be ≥ 1, got %d", cfg.NumBlocks)
	case cfg.NumHostBlocks < 0:
		return nil, fmt.Errorf("kvcache: NumHostBlocks must be ≥ 0, got %d", cfg.NumHostBlocks)
	case cfg.NumBlocks > 1<<30 || cfg.NumHostBlocks > 1<<30:
		return nil, fmt.Errorf("kvcache: NumBlocks and NumHostBlocks must be ≤ 2^30, got %d and %d",
			cfg.NumBlocks, cfg.NumHostBlocks)
	case len(cfg.Windows) > 64:
		return nil, fmt.Errorf("kvcache: at most 64 KV groups, got %d", len(cfg.Windows))
	case int64(cfg.NumBlocks)*int64(cfg.BlockSize) > 1<<31-1:
		return nil, fmt.Errorf("kvcache: NumBlocks×BlockSize must fit int32 slots, got %d×%d",
			cfg.NumBlocks, cfg.BlockSize)
	}
	for g, w := range cfg.Windows {
		if w < 0 {
			return nil, fmt.Errorf("kvcache: group %d has window %d; want ≥ 0 (0: full attention)", g, w)
		}
	}
	windows := append([]int(nil), cfg.Windows...)
	if len(windows) == 0 {
		windows = []int{0}
	}
	n := max(cfg.NumBlocks, cfg.NumHostBlocks)
	m := &Manager{
		blockSize: cfg.BlockSize,
		windows:   windows,
		device:    newPool(cfg.NumBlocks, cfg.BlockSize, cfg.EnablePrefixCaching),
		host:      newPool(cfg.NumHostBlocks, cfg.BlockSize, false),
		seqs:      make(map[int64]*seqState),
		hashFn:    hashBlock,
		nextCID:   1,
		hits:      make([][]int32, len(windows)),
		remap:     make([]int32, n),
		touched:   make([]int32, 0, n),
	}
	for i := range m.remap {
		m.remap[i] = noLink
	}
	return m, nil
}

// BlockSize is the number of token slots per block.
func (m *Manager) BlockSize() int { return m.blockSize }

// NumGroups is the number of KV cache groups (Config.Windows).
func (m *Manager) NumGroups() int { return len(m.windows) }

// Window is group g's sliding window in positions, 0 for full attention.
func (m *Manager) Window(g int) int { return m.windows[g] }

// Device is the device pool (read-only use).
func (m *Manager) Device() *Pool { return m.device }

// Host is the host swap pool (read-only use).
func (m *Manager) Host() *Pool { return m.host }

// NumFreeBlocks is the number of free device blocks, evictable cached ones included.
func (m *Manager) NumFreeBlocks() int { return m.device.numFree }

// NumFreeHostBlocks is the number of free host blocks.
func (m *Manager) NumFreeHostBlocks() int { return m.host.numFree }

// Usage is the fraction of device blocks in use, in [0, 1].
func (m *Manager) Usage() float64 { return m.device.Usage() }

// PrefixCaching reports whether prefix caching is on.
func (m *Manager) PrefixCaching() bool { return m.device.cached != nil }

// Stats returns the prefix-cache counters.
func (m *Manager) Stats() Stats {
	s := m.stats
	s.Evictions = m.device.evictions
	return s
}

// NumSequences is the number of sequences with a block table.
func (m *Manager) NumSequences() int { return len(m.seqs) }

// Contains reports whether seqID has a block table (on device or host).
func (m *Manager) Contains(seqID int64) bool { _, ok := m.seqs[seqID]; return ok }

// SwappedOut reports whether seqID exists and its blocks are in the host pool.
func (m *Manager) SwappedOut(seqID int64) bool {
	st, ok := m.seqs[seqID]
	return ok && st.onHost
}

// NumTokens is the number of tokens of seqID with a reserved slot.
func (m *Manager) NumTokens(seqID int64) (int, bool) {
	st, ok := m.seqs[seqID]
	if !ok {
		return 0, false
	}
	return st.numTokens, true
}

// blocksFor is the number of blocks n tokens need.
func (m *Manager) blocksFor(n int) int { return (n + m.blockSize - 1) / m.blockSize }

// lookup returns the table of seqID, which must be on the device unless
// onHostOK.
func (m *Manager) lookup(seqID int64, onHostOK bool) (*seqState, error) {
	st, ok := m.seqs[seqID]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownSequence, seqID)
	}
	if st.onHost && !onHostOK {
		return nil, fmt.Errorf("%w: %d", ErrSwappedOut, seqID)
	}
	return st, nil
}

// newSeq registers an empty table for seqID, reusing a freed one.
func (m *Manager) newSeq(seqID int64) *seqState {
	var st *seqState
	if n := len(m.spare); n > 0 {
		st = m.spare[n-1]
		m.spare = m.spare[:n-1]
	} else {
		st = &seqState{tables: make([][]int32, len(m.windows)), chain: make([]link, len(m.windows))}
	}
	for g := range st.chain {
		st.chain[g] = link{hash: rootOf(g)}
	}
	m.seqs[seqID] = st
	return st
}

// released is how many leading blocks of a group with window w no query
// from position first on reads: block i holds positions [i·B, (i+1)·B), and
// a query at position p reads keys from p−w+1 (0 for full attention).
func (m *Manager) released(w, first int) int {
	if w <= 0 || first-w+1 <= 0 {
		return 0
	}
	return (first - w + 1) / m.blockSize
}

// pool returns the pool holding st's blocks.
func (m *Manager) pool(st *seqState) *Pool {
	if st.onHost {
		return m.host
	}
	return m.device
}
