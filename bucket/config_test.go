package bucket

import (
	"strings"
	"testing"
)

// cpuLimits are pagoda's `buckets` defaults with NumBlocks derived:
// 64·⌈8192/16⌉ = 32768.
var cpuLimits = Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 8192, BlockSize: 16}

func resolved(t *testing.T, l Limits) Limits {
	t.Helper()
	r, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Expected values follow get_prompt_cfgs:
//
//	bs    = [1, 2, P, ceil(log2(P)) + 1]
//	query = [B, B, T, ceil(log2(T))]
//	ctx   = [0, 1, max_ctx, 2 if max_ctx == 1 else ceil(log2(max_ctx)) + 1],
//	        max_ctx = max(1, (L − B) // B)
//
// and with merged prefill bs = (1, 1, 1, 1), query = (B, 4B, T, limit),
// ctx = (0, 4, max_ctx·P, limit).
func TestExponentialPromptConfigs(t *testing.T) {
	// on: merged prefill.
	checkDims(t, "exponentialPrompt", exponentialPrompt, []dimsCase{
		// P = 64: limit 6+1 = 7. T = 2048: limit 11. max_ctx = 8176//16 =
		// 511, limit ceil(log2(511)) + 1 = 9 + 1 = 10.
		{"cpu defaults", cpuLimits, false, Dims{
			BS: Range{1, 2, 64, 7}, Seq: Range{16, 16, 2048, 11}, Block: Range{0, 1, 511, 10}}},
		// P = 6: ceil(log2(6)) + 1 = 4. T = 4096: 12. max_ctx =
		// (2048−128)//128 = 15: ceil(log2(15)) + 1 = 5.
		{"gaudi-like", Limits{MaxNumSeqs: 8, MaxNumPrefillSeqs: 6, MaxNumBatchedTokens: 4096,
			MaxModelLen: 2048, BlockSize: 128}, false, Dims{
			BS: Range{1, 2, 6, 4}, Seq: Range{128, 128, 4096, 12}, Block: Range{0, 1, 15, 5}}},
		// P = 1: log2(1) = 0, limit 1. max_ctx = max(1, (32−16)//16) = 1:
		// limit 2. T = 64: 6.
		{"max_ctx 1", Limits{MaxNumSeqs: 1, MaxNumBatchedTokens: 64, MaxModelLen: 32, BlockSize: 16}, false, Dims{
			BS: Range{1, 2, 1, 1}, Seq: Range{16, 16, 64, 6}, Block: Range{0, 1, 1, 2}}},
		// (16−16)//16 = 0, raised to 1.
		{"max_ctx raised to 1", Limits{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, MaxModelLen: 16, BlockSize: 16}, false, Dims{
			BS: Range{1, 2, 2, 2}, Seq: Range{16, 16, 64, 6}, Block: Range{0, 1, 1, 2}}},
		// Merged: query step 4·16 = 64, ctx max 511·64 = 32704.
		{"merged prefill", cpuLimits, true, Dims{
			BS: Range{1, 1, 1, 1}, Seq: Range{16, 64, 2048, 11}, Block: Range{0, 4, 32704, 10}}},
	})
}

// Expected values follow get_decode_cfgs:
//
//	bs    = [1, 2, S, ceil(log2(S)) + 1]
//	query = [1, 1, 1, 1]
//	block = [1, S, max_decode_blocks, ceil(log2(M)) + 1],
//	        max_decode_blocks = M if contiguous PA else min(L // B · S, M)
func TestExponentialDecodeConfigs(t *testing.T) {
	// on: contiguous PA.
	checkDims(t, "exponentialDecode", exponentialDecode, []dimsCase{
		// M = 32768 (derived): min(512·64, 32768) = 32768; log2 = 15 → 16.
		{"cpu defaults", cpuLimits, false, Dims{
			BS: Range{1, 2, 64, 7}, Seq: Range{1, 1, 1, 1}, Block: Range{1, 64, 32768, 16}}},
		// M = 5000: min(32768, 5000) = 5000; ceil(log2(5000)) = 13 → 14.
		{"small pool", Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 8192, BlockSize: 16,
			NumBlocks: 5000}, false, Dims{
			BS: Range{1, 2, 64, 7}, Seq: Range{1, 1, 1, 1}, Block: Range{1, 64, 5000, 14}}},
		// M = 50000: without contiguous PA min(32768, 50000) = 32768; with
		// it 50000. ceil(log2(50000)) = 16 → 17.
		{"large pool", Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 8192, BlockSize: 16,
			NumBlocks: 50000}, false, Dims{
			BS: Range{1, 2, 64, 7}, Seq: Range{1, 1, 1, 1}, Block: Range{1, 64, 32768, 17}}},
		{"large pool contiguous PA", Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 8192,
			BlockSize: 16, NumBlocks: 50000}, true, Dims{
			BS: Range{1, 2, 64, 7}, Seq: Range{1, 1, 1, 1}, Block: Range{1, 64, 50000, 17}}},
		// S = 3: ceil(log2(3)) + 1 = 3. 100//16 = 6, ·3 = 18 < 1000.
		// ceil(log2(1000)) = 10 → 11.
		{"odd sizes", Limits{MaxNumSeqs: 3, MaxNumBatchedTokens: 64, MaxModelLen: 100, BlockSize: 16,
			NumBlocks: 1000}, false, Dims{
			BS: Range{1, 2, 3, 3}, Seq: Range{1, 1, 1, 1}, Block: Range{1, 3, 18, 11}}},
	})
}

// dimsCase is a case of an exponential config function: the limits, its
// switch (merged prefill, contiguous PA) and the dims they give.
type dimsCase struct {
	name string
	l    Limits
	on   bool
	want Dims
}

// checkDims runs f, named fn, on every case as a subtest.
func checkDims(t *testing.T, fn string, f func(Limits, bool) Dims, tests []dimsCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f(resolved(t, tt.l), tt.on); got != tt.want {
				t.Errorf("%s = %+v, want %+v", fn, got, tt.want)
			}
		})
	}
}

func TestLinearConfigs(t *testing.T) {
	var qmin Overrides
	qmin.Set(Key{Prompt, Seq, Min}, 32, "PAGODA_PROMPT_SEQ_BUCKET_MIN")
	var all Overrides
	all.Set(Key{Prompt, BS, Max}, 8, "--prompt-bs-bucket-max")
	all.Set(Key{Decode, BS, Step}, 4, "--decode-bs-bucket-step")
	all.Set(Key{Decode, Block, Min}, 16, "--decode-block-bucket-min")
	tests := []struct {
		name           string
		merged         bool
		o              Overrides
		prompt, decode Dims
	}{
		// Query step ⌈2048/32⌉ = 64; max_ctx (8192−16)/16 = 511, step
		// ⌈511/32⌉ = 16; decode blocks max(8192·64/16, 16) = 32768, step
		// 32768/32 = 1024.
		{"defaults", false, Overrides{},
			Dims{BS: Range{Min: 1, Step: 32, Max: 64}, Seq: Range{Min: 16, Step: 64, Max: 2048},
				Block: Range{Min: 0, Step: 16, Max: 511}},
			Dims{BS: Range{Min: 1, Step: 32, Max: 64}, Seq: Range{Min: 1, Step: 1, Max: 1},
				Block: Range{Min: 1, Step: 1024, Max: 32768}}},
		// max_ctx follows the overridden query min: (8192−32)/16 = 510.
		{"query min override", false, qmin,
			Dims{BS: Range{Min: 1, Step: 32, Max: 64}, Seq: Range{Min: 32, Step: 64, Max: 2048},
				Block: Range{Min: 0, Step: 16, Max: 510}},
			Dims{BS: Range{Min: 1, Step: 32, Max: 64}, Seq: Range{Min: 1, Step: 1, Max: 1},
				Block: Range{Min: 1, Step: 1024, Max: 32768}}},
		{"overrides", false, all,
			Dims{BS: Range{Min: 1, Step: 32, Max: 8}, Seq: Range{Min: 16, Step: 64, Max: 2048},
				Block: Range{Min: 0, Step: 16, Max: 511}},
			Dims{BS: Range{Min: 1, Step: 4, Max: 64}, Seq: Range{Min: 1, Step: 1, Max: 1},
				Block: Range{Min: 16, Step: 1024, Max: 32768}}},
		// Merged: bs (1, 1, 1), query step 4·64, ctx (0, 4, 511·64).
		{"merged prefill", true, Overrides{},
			Dims{BS: Range{Min: 1, Step: 1, Max: 1}, Seq: Range{Min: 16, Step: 256, Max: 2048},
				Block: Range{Min: 0, Step: 4, Max: 32704}},
			Dims{BS: Range{Min: 1, Step: 32, Max: 64}, Seq: Range{Min: 1, Step: 1, Max: 1},
				Block: Range{Min: 1, Step: 1024, Max: 32768}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := resolved(t, cpuLimits)
			prompt, _ := linearPrompt(l, tt.merged, &tt.o)
			decode, warnings := linearDecode(l, false, &tt.o)
			if prompt != tt.prompt {
				t.Errorf("prompt = %+v, want %+v", prompt, tt.prompt)
			}
			if decode != tt.decode {
				t.Errorf("decode = %+v, want %+v", decode, tt.decode)
			}
			if len(warnings) != 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestLinearDecodeBlockMaxCapped(t *testing.T) {
	var o Overrides
	o.Set(Key{Decode, Block, Max}, 9000, "PAGODA_DECODE_BLOCK_BUCKET_MAX")
	l := resolved(t, Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 8192, BlockSize: 16, NumBlocks: 4000})
	d, warnings := linearDecode(l, false, &o)
	if d.Block.Max != 4000 {
		t.Errorf("block max = %d, want 4000", d.Block.Max)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "--num-blocks=4000") {
		t.Errorf("warnings = %q, want one naming --num-blocks=4000", warnings)
	}
}

func TestLimitsResolve(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		l := resolved(t, Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 256, MaxModelLen: 100, BlockSize: 16})
		// 8·⌈100/16⌉ = 8·7 = 56.
		if l.MaxNumPrefillSeqs != 8 || l.NumBlocks != 56 {
			t.Errorf("resolved %+v, want MaxNumPrefillSeqs 8, NumBlocks 56", l)
		}
	})
	errs := []struct {
		name string
		l    Limits
		want string
	}{
		{"seqs", Limits{MaxNumBatchedTokens: 64, MaxModelLen: 64, BlockSize: 16}, "--max-num-seqs is 0, must be ≥ 1"},
		{"block size", Limits{MaxNumSeqs: 1, MaxNumBatchedTokens: 64, MaxModelLen: 64}, "--block-size is 0"},
		{"prefill seqs", Limits{MaxNumSeqs: 4, MaxNumPrefillSeqs: 5, MaxNumBatchedTokens: 64, MaxModelLen: 64,
			BlockSize: 16}, "--max-num-prefill-seqs is 5, must be in [0, --max-num-seqs=4]"},
		{"num blocks", Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 64, BlockSize: 16,
			NumBlocks: -1}, "--num-blocks is -1"},
		{"model len", Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 8, BlockSize: 16},
			"--max-model-len is 8, must be ≥ --block-size=16"},
		{"batched tokens", Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 8, MaxModelLen: 64, BlockSize: 16},
			"--max-num-batched-tokens is 8, must be ≥ --block-size=16"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.l.Resolve()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Resolve() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseStrategy(t *testing.T) {
	tests := []struct {
		in      string
		want    Strategy
		wantErr bool
	}{
		{"exponential", Exponential, false},
		{"linear", Linear, false},
		{"exp", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseStrategy(tt.in)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "allowed: exponential, linear") {
					t.Errorf("ParseStrategy(%q) error = %v, want one naming the allowed values", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want || got.String() != tt.in {
				t.Errorf("ParseStrategy(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
}
