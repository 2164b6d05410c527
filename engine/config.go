package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"pagoda/bucket"
	"pagoda/dist"
	"pagoda/model"
	"pagoda/sched"
)

// Config is the engine's configuration, validated once by New. Errors name
// the flag and its allowed range.
type Config struct {
	Model               string // GGUF path
	MaxModelLen         int    // 0: the model's trained context length
	BlockSize           int    // tokens per KV block
	KVCacheMemory       int64  // bytes of device KV cache; 0: a default from free RAM
	NumBlocksOverride   int    // device KV blocks, overriding KVCacheMemory (tests, tuning)
	SwapSpace           int64  // bytes of host swap space for preempted groups
	KVCacheType         model.KVType
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// LongPrefillTokenThreshold, MaxNumPartialPrefills and
	// MaxLongPartialPrefills bound the prompt tokens of a step (see
	// sched.Config). A threshold of 0 with MaxNumPartialPrefills > 1 is 4%
	// of MaxModelLen, as in vLLM.
	LongPrefillTokenThreshold int
	MaxNumPartialPrefills     int
	MaxLongPartialPrefills    int
	EnablePrefixCaching       bool
	Preemption                sched.PreemptionMode
	Threads                   int  // 0: all cores
	FlashAttention            bool // llama.cpp's flash-attention arithmetic (see model.LoadOptions)
	ExactArithmetic           bool // llama.cpp's arithmetic, bit for bit (see model.LoadOptions)
	NoRepack                  bool // llama.cpp's plain arithmetic for Q4_0 and MXFP4 weights too; implies ExactArithmetic
	// EnforceEager runs every step without captured plans.
	EnforceEager bool
	// Bucketing configures the shape buckets plans are captured for.
	Bucketing bucket.Options
	// DBO is dual-batch overlap (--enable-dbo and its thresholds): the
	// scheduler splits the steps over the thresholds into two micro-batches
	// (sched.Step.Split, broadcast with the step), and the runner overlaps
	// one micro-batch's all-reduces with the other's compute. Results are
	// the same bit for bit; without tensor parallelism there is nothing to
	// overlap.
	DBO sched.DBO
	// KVCache is how New sized the device KV cache (set by New, as
	// MaxModelLen is resolved; ignored on input).
	KVCache KVCacheSizing
	// TensorParallel, when set with Size() > 1, makes this engine rank 0
	// of a tensor-parallel group: it loads rank 0's shard and broadcasts
	// every step to the other ranks, which run Follow (see tp.go). nil: one
	// process.
	TensorParallel dist.Comm
	// ExpertParallel (--enable-expert-parallel) keeps each expert of a
	// mixture of experts whole on one rank, the experts spread over the
	// tensor-parallel ranks (model.LoadOptions.ExpertParallel); without
	// tensor parallelism or experts it changes nothing.
	ExpertParallel bool
	// TPStepTimeout bounds every wait of a tensor-parallel step on the
	// other ranks (a broadcast, an all-reduce) plus TPTimeoutPerToken per
	// token of the step; a wait past it fails the engine (failure.go). 0
	// means DefaultTPStepTimeout. --tp-step-timeout.
	TPStepTimeout time.Duration
	// TPHeartbeat is how often an idle rank 0 checks that every rank
	// answers (tp.go); 0 means DefaultTPHeartbeat.
	TPHeartbeat time.Duration
	// Speculative is speculative decoding (--speculative-config); nil: off.
	Speculative *SpeculativeConfig
}

// loadOptions are the model.LoadOptions of c.
func (c Config) loadOptions() model.LoadOptions {
	o := model.LoadOptions{Threads: c.Threads, FlashAttention: c.FlashAttention,
		ExactArithmetic: c.ExactArithmetic, NoRepack: c.NoRepack, ContextLen: c.MaxModelLen}
	if c.TensorParallel != nil {
		o.TensorParallel, o.ExpertParallel = c.TensorParallel, c.ExpertParallel
	}
	return o
}

// DefaultConfig returns the defaults of `pagoda serve`.
func DefaultConfig(modelPath string) Config {
	return Config{
		Model:                  modelPath,
		BlockSize:              16,
		SwapSpace:              256 << 20,
		KVCacheType:            model.KVF16,
		MaxNumSeqs:             64,
		MaxNumBatchedTokens:    2048,
		MaxLongPartialPrefills: 1,
		EnablePrefixCaching:    true,
		Bucketing:              defaultBucketing(),
		DBO:                    sched.DefaultDBO(),
	}
}

// defaultBucketing is the exponential strategy with merged prefill: a
// prompt step is one flat batch, so its bucket is (1, total tokens, total
// context blocks), as the runner builds it.
func defaultBucketing() bucket.Options {
	o := bucket.DefaultOptions()
	o.MergedPrefill = true
	return o
}

// bucketTable builds the buckets plans are captured for, or nil with
// EnforceEager.
func (c *Config) bucketTable(numBlocks int) (*bucket.Table, error) {
	if c.EnforceEager {
		return nil, nil
	}
	return bucket.New(bucket.Limits{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens,
		MaxModelLen: c.MaxModelLen, BlockSize: c.BlockSize, NumBlocks: numBlocks}, c.Bucketing)
}

// MaxBlockSize bounds --block-size.
const MaxBlockSize = 1024

// validate checks the fields that do not depend on the model.
func (c *Config) validate() error {
	if c.Speculative != nil {
		if err := c.Speculative.resolve(); err != nil {
			return fmt.Errorf("--speculative-config: %w", err)
		}
	}
	switch {
	case c.Model == "":
		return fmt.Errorf("--model: a GGUF file path is required")
	case c.BlockSize < 1 || c.BlockSize > MaxBlockSize:
		return fmt.Errorf("--block-size must be in [1, %d], got %d", MaxBlockSize, c.BlockSize)
	case c.KVCacheMemory < 0:
		return fmt.Errorf("--kv-cache-memory must be ≥ 0 bytes, got %d", c.KVCacheMemory)
	case c.SwapSpace < 0:
		return fmt.Errorf("--swap-space must be ≥ 0 bytes, got %d", c.SwapSpace)
	case c.MaxModelLen < 0:
		return fmt.Errorf("--max-model-len must be ≥ 1 (0: the model's context length), got %d", c.MaxModelLen)
	case c.NumBlocksOverride < 0:
		return fmt.Errorf("--num-gpu-blocks-override must be ≥ 0, got %d", c.NumBlocksOverride)
	case c.Threads < 0:
		return fmt.Errorf("--threads must be ≥ 0, got %d", c.Threads)
	case c.KVCacheType == model.KVQ8_0 && (c.ExactArithmetic || c.NoRepack || c.FlashAttention):
		return fmt.Errorf("--kv-cache-dtype q8_0 needs the fast arithmetic's attention: not with --exact-arithmetic, --no-repack or flash attention")
	}
	return c.schedConfig().Validate()
}

// schedConfig is the scheduler's part of c.
func (c *Config) schedConfig() sched.Config {
	return sched.Config{MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens, Preemption: c.Preemption,
		LongPrefillTokenThreshold: c.LongPrefillTokenThreshold, MaxNumPartialPrefills: c.MaxNumPartialPrefills,
		MaxLongPartialPrefills: c.MaxLongPartialPrefills, DBO: c.DBO}
}

// resolvePrefillThreshold applies vLLM's default threshold (4% of
// MaxModelLen when concurrent partial prefills are on) once MaxModelLen is
// known, and checks the threshold against it.
func (c *Config) resolvePrefillThreshold() error {
	if c.LongPrefillTokenThreshold == 0 && c.MaxNumPartialPrefills > 1 {
		c.LongPrefillTokenThreshold = max(1, c.MaxModelLen*4/100)
	}
	if c.LongPrefillTokenThreshold > c.MaxModelLen {
		return fmt.Errorf("--long-prefill-token-threshold must be ≤ --max-model-len (%d), got %d",
			c.MaxModelLen, c.LongPrefillTokenThreshold)
	}
	return nil
}

// KVCacheSizing is how New sized the device KV cache: the block count,
// the bytes of a block, and why. Reason reads after "KV cache: N blocks:",
// e.g. "--kv-cache-memory 2 GiB".
type KVCacheSizing struct {
	NumBlocks  int
	BlockBytes int64
	Reason     string
	// Groups describes the KV cache groups ("1 full attention, 5 window
	// 512"); empty with one group.
	Groups string
	// SeqBlocks is the most blocks one sequence of --max-model-len tokens
	// holds at once over all groups (its bytes: SeqBlocks·BlockBytes);
	// FullSeqBytes what it would hold if every layer attended to its whole
	// context.
	SeqBlocks    int
	FullSeqBytes int64
}

// Bytes is the device KV cache's size.
func (s KVCacheSizing) Bytes() int64 { return int64(s.NumBlocks) * s.BlockBytes }

// Default KV cache sizing: what every running sequence could need at full
// length (--max-num-seqs × --max-model-len), plus a quarter for prefix
// caching, at most a quarter of the available memory.
const (
	prefixCacheMargin = 4 // the margin is 1/prefixCacheMargin of the full-length demand
	memoryFraction    = 4 // the cache takes at most 1/memoryFraction of MemAvailable
)

// cacheSizes returns the device and host block counts for a model and
// records in c.KVCache how the device count was chosen.
func (c *Config) cacheSizes(mc model.Config) (numBlocks, numHostBlocks int, err error) {
	s, err := c.sizeKVCache(mc, availableMemory)
	if err != nil {
		return 0, 0, err
	}
	c.KVCache = s
	return s.NumBlocks, int(c.SwapSpace / s.BlockBytes), nil
}

// sizeKVCache chooses the device block count, in this order: the
// --num-gpu-blocks-override; --kv-cache-memory; else the blocks that
// --max-num-seqs sequences of --max-model-len tokens hold, plus a quarter
// with prefix caching (so that finished requests' prefixes survive while
// every sequence runs at full length), at most a quarter of the memory
// available() reports (read only in that case). The count must hold one
// sequence of --max-model-len tokens.
func (c *Config) sizeKVCache(mc model.Config, available func() int64) (KVCacheSizing, error) {
	lay := mc.KVLayout()
	per := int64(model.BlockBytes(lay.Tensors, c.BlockSize, mc.KVHeads, mc.HeadDim, c.KVCacheType))
	perSeq := c.seqBlocks(lay)
	full := int64((c.MaxModelLen+c.BlockSize-1)/c.BlockSize) * int64(model.BlockBytes(len(lay.Group), c.BlockSize, mc.KVHeads, mc.HeadDim, c.KVCacheType))
	s := KVCacheSizing{BlockBytes: per, SeqBlocks: perSeq, FullSeqBytes: full, Groups: groupsText(lay)}
	switch {
	case c.NumBlocksOverride > 0:
		s.NumBlocks, s.Reason = c.NumBlocksOverride, fmt.Sprintf("--num-gpu-blocks-override %d", c.NumBlocksOverride)
	case c.KVCacheMemory > 0:
		s.NumBlocks, s.Reason = int(c.KVCacheMemory/per), "--kv-cache-memory "+sizeText(c.KVCacheMemory)
	default:
		demand := int64(c.MaxNumSeqs) * int64(perSeq)
		why := fmt.Sprintf("--max-num-seqs %d × --max-model-len %d", c.MaxNumSeqs, c.MaxModelLen)
		if c.EnablePrefixCaching {
			demand += demand / prefixCacheMargin
			why += " + 25% for prefix caching"
		}
		avail := available()
		limit := avail / memoryFraction / per
		if demand <= limit {
			s.NumBlocks, s.Reason = int(demand), why
		} else {
			s.NumBlocks = int(limit)
			s.Reason = fmt.Sprintf("a quarter of the available memory (%s of %s); %s would take %s",
				sizeText(limit*per), sizeText(avail), why, sizeText(demand*per))
		}
	}
	if s.NumBlocks < perSeq {
		return s, fmt.Errorf("the KV cache (%s) holds %d blocks of %d tokens (%d bytes each); "+
			"one sequence of --max-model-len %d needs %d at once: raise --kv-cache-memory or lower --max-model-len",
			s.Reason, s.NumBlocks, c.BlockSize, per, c.MaxModelLen, perSeq)
	}
	return s, nil
}

// seqBlocks is the most blocks one sequence of --max-model-len tokens holds
// at once: every block of its context in a full-attention group; in a
// sliding-window group, the blocks of its window and of the largest chunk a
// step computes (what it holds before the next step releases the rest).
func (c *Config) seqBlocks(lay model.KVLayout) int {
	n := 0
	for _, w := range lay.Windows {
		tokens := c.MaxModelLen
		if w > 0 {
			tokens = min(tokens, w-1+max(c.MaxNumBatchedTokens, 1)+c.BlockSize)
		}
		n += (tokens + c.BlockSize - 1) / c.BlockSize
	}
	return n
}

// groupsText describes a layout's groups, "" with one group.
func groupsText(lay model.KVLayout) string {
	if !lay.Hybrid() {
		return ""
	}
	count := map[int]int{}
	var kinds []int
	for _, w := range lay.Windows {
		if count[w] == 0 {
			kinds = append(kinds, w)
		}
		count[w]++
	}
	var parts []string
	for _, w := range kinds {
		if w == 0 {
			parts = append(parts, fmt.Sprintf("%d full attention", count[w]))
		} else {
			parts = append(parts, fmt.Sprintf("%d sliding window %d", count[w], w))
		}
	}
	return fmt.Sprintf("%d groups of %d layers (%s)", lay.NumGroups(), lay.Tensors, strings.Join(parts, ", "))
}

// sizeText writes bytes in GiB or MiB, one decimal.
func sizeText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// availableMemory reads MemAvailable from /proc/meminfo (4 GiB if unknown).
func availableMemory() int64 {
	const fallback = 4 << 30
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallback
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return fallback
}
