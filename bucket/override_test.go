package bucket

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestKeyNames(t *testing.T) {
	keys := Keys()
	if len(keys) != 18 {
		t.Fatalf("len(Keys()) = %d, want 18", len(keys))
	}
	tests := []struct {
		k         Key
		env, flag string
	}{
		{Key{Prompt, BS, Min}, "PAGODA_PROMPT_BS_BUCKET_MIN", "prompt-bs-bucket-min"},
		{Key{Prompt, Seq, Step}, "PAGODA_PROMPT_SEQ_BUCKET_STEP", "prompt-seq-bucket-step"},
		{Key{Decode, Block, Max}, "PAGODA_DECODE_BLOCK_BUCKET_MAX", "decode-block-bucket-max"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			if got := tt.k.EnvVar(); got != tt.env {
				t.Errorf("EnvVar() = %q, want %q", got, tt.env)
			}
			if got := tt.k.Flag(); got != tt.flag {
				t.Errorf("Flag() = %q, want %q", got, tt.flag)
			}
		})
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.EnvVar()] {
			t.Errorf("duplicate key %s", k.EnvVar())
		}
		seen[k.EnvVar()] = true
	}
}

func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestOverridesFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    map[Key]int
		wantErr []string
	}{
		{"none", map[string]string{"PAGODA_OTHER": "x"}, map[Key]int{}, nil},
		{"values", map[string]string{
			"PAGODA_PROMPT_BS_BUCKET_MIN":    "2",
			"PAGODA_DECODE_BLOCK_BUCKET_MAX": " 4096 ",
			"PAGODA_DECODE_SEQ_BUCKET_STEP":  "0",
		}, map[Key]int{{Prompt, BS, Min}: 2, {Decode, Block, Max}: 4096, {Decode, Seq, Step}: 0}, nil},
		{"empty is unset", map[string]string{"PAGODA_PROMPT_BS_BUCKET_MIN": ""}, map[Key]int{}, nil},
		{"errors name each variable", map[string]string{
			"PAGODA_PROMPT_SEQ_BUCKET_MAX":   "2k",
			"PAGODA_DECODE_BS_BUCKET_STEP":   "-1",
			"PAGODA_DECODE_BS_BUCKET_MIN":    "1",
			"PAGODA_PROMPT_BLOCK_BUCKET_MIN": "1.5",
		}, nil, []string{
			`PAGODA_PROMPT_SEQ_BUCKET_MAX="2k": not an integer`,
			`PAGODA_DECODE_BS_BUCKET_STEP="-1": must be ≥ 0`,
			`PAGODA_PROMPT_BLOCK_BUCKET_MIN="1.5": not an integer`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := OverridesFromEnv(mapLookup(tt.env))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range Keys() {
				v, ok := o.Get(k)
				want, wantOK := tt.want[k]
				if ok != wantOK || v != want {
					t.Errorf("Get(%s) = %d, %v; want %d, %v", k.EnvVar(), v, ok, want, wantOK)
				}
				if ok && o.Source(k) != k.EnvVar() {
					t.Errorf("Source(%s) = %q", k.EnvVar(), o.Source(k))
				}
			}
		})
	}
}

func TestOverrideFlagsWinOverEnv(t *testing.T) {
	opts := DefaultOptions()
	env, err := OverridesFromEnv(mapLookup(map[string]string{
		"PAGODA_PROMPT_BS_BUCKET_MAX":  "8",
		"PAGODA_DECODE_BS_BUCKET_STEP": "4",
	}))
	if err != nil {
		t.Fatal(err)
	}
	opts.Overrides = env
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.RegisterFlags(fs)
	args := []string{"--bucketing-strategy", "linear", "--prompt-bs-bucket-max", "16", "--max-capture-tokens", "0",
		"--merged-prefill", "--prefix-caching=false"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if opts.Strategy != Linear || opts.MaxCaptureTokens != 0 || !opts.MergedPrefill || opts.PrefixCaching {
		t.Errorf("options after parse: %+v", opts)
	}
	tests := []struct {
		k      Key
		v      int
		source string
	}{
		{Key{Prompt, BS, Max}, 16, "--prompt-bs-bucket-max"},
		{Key{Decode, BS, Step}, 4, "PAGODA_DECODE_BS_BUCKET_STEP"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			v, ok := opts.Overrides.Get(tt.k)
			if !ok || v != tt.v || opts.Overrides.Source(tt.k) != tt.source {
				t.Errorf("Get = %d, %v from %q; want %d from %q", v, ok, opts.Overrides.Source(tt.k), tt.v, tt.source)
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--decode-seq-bucket-min", "x"}, "not an integer"},
		{[]string{"--decode-seq-bucket-min", "-3"}, "must be ≥ 0"},
		{[]string{"--bucketing-strategy", "log"}, `unknown bucketing strategy "log" (allowed: exponential, linear)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts := DefaultOptions()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			opts.RegisterFlags(fs)
			err := fs.Parse(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
