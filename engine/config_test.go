package engine

import (
	"strings"
	"testing"

	"pagoda/model"
)

// The partial-prefill flags: vLLM's 4% default threshold with concurrent
// partial prefills, the threshold bounded by --max-model-len, and the
// scheduler's checks named by flag.
func TestPrefillLimitsConfig(t *testing.T) {
	for _, tc := range []struct {
		name                string
		threshold, partial  int
		long, wantThreshold int
		wantErr             string
	}{
		{"off", 0, 0, 1, 0, ""},
		{"one partial keeps 0", 0, 1, 1, 0, ""},
		{"4 percent", 0, 2, 1, 327, ""},
		{"explicit", 256, 2, 1, 256, ""},
		{"above max-model-len", 9000, 1, 1, 0, "--long-prefill-token-threshold must be ≤ --max-model-len (8192)"},
		{"long above partial", 256, 2, 3, 0, "--max-long-partial-prefills must be ≤ --max-num-partial-prefills (2)"},
		{"negative", -1, 0, 1, 0, "--long-prefill-token-threshold must be ≥ 0"},
		{"negative long", 0, 0, -1, 0, "--max-long-partial-prefills must be ≥ 1 (0: 1), got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig("m.gguf")
			c.MaxModelLen = 8192
			c.LongPrefillTokenThreshold, c.MaxNumPartialPrefills, c.MaxLongPartialPrefills = tc.threshold, tc.partial, tc.long
			err := c.validate()
			if err == nil {
				err = c.resolvePrefillThreshold()
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && c.LongPrefillTokenThreshold != tc.wantThreshold:
				t.Fatalf("threshold %d, want %d", c.LongPrefillTokenThreshold, tc.wantThreshold)
			}
		})
	}
}

// A q8_0 KV cache runs with the fast arithmetic's attention only: with
// llama.cpp's exact paths it is refused, naming the flags.
func TestKVQ8Config(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(c *Config)
		wantErr bool
	}{
		{"fast", func(c *Config) {}, false},
		{"exact", func(c *Config) { c.ExactArithmetic = true }, true},
		{"no-repack", func(c *Config) { c.NoRepack = true }, true},
		{"flash", func(c *Config) { c.FlashAttention = true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig("m.gguf")
			c.KVCacheType = model.KVQ8_0
			tc.set(&c)
			err := c.validate()
			if tc.wantErr != (err != nil) || err != nil && !strings.Contains(err.Error(), "--kv-cache-dtype q8_0") {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
		})
	}
}
