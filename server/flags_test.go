package server

import (
	"encoding/json"
	"flag"
	"testing"

	"pagoda/engine"
	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1048576", 1 << 20, true},
		{"512MiB", 512 << 20, true},
		{"2GiB", 2 << 30, true},
		{"1.5GiB", 3 << 29, true},
		{"2 GiB", 2 << 30, true},
		{"4G", 4 << 30, true},
		{"10KB", 10000, true},
		{"3MB", 3000000, true},
		{"100B", 100, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1XB", 0, false},
		{"GiB", 0, false},
		{"1e30GiB", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// Environment variables set flags; the command line wins over them.
func TestApplyEnv(t *testing.T) {
	env := map[string]string{"PAGODA_PORT": "9000", "PAGODA_MAX_NUM_SEQS": "7", "PAGODA_KV_CACHE_MEMORY": "1GiB",
		"PAGODA_ENABLE_PREFIX_CACHING": "false"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name      string
		args      []string
		port, seq int
	}{
		{"env_only", nil, 9000, 7},
		{"flag_wins", []string{"--port", "8123"}, 8123, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			port := fs.Int("port", 8000, "")
			seqs := fs.Int("max-num-seqs", 64, "")
			var kv SizeFlag
			fs.Var(&kv, "kv-cache-memory", "")
			prefix := fs.Bool("enable-prefix-caching", true, "")
			if err := ApplyEnv(fs, lookup); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if *port != tc.port || *seqs != tc.seq || kv != 1<<30 || *prefix {
				t.Fatalf("port %d seqs %d kv %d prefix %v", *port, *seqs, kv, *prefix)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("port", 8000, "")
	bad := func(k string) (string, bool) { return "eighty", k == "PAGODA_PORT" }
	if err := ApplyEnv(fs, bad); err == nil {
		t.Fatal("a malformed PAGODA_PORT was accepted")
	}
}

// FuzzCompletionRequest: any body either parses into engine parameters
// and prompts, or is refused with an error; nothing panics.
func FuzzCompletionRequest(f *testing.F) {
	tok, err := tokenizer.Load(testmodel.Stories(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"prompt": "Once upon", "max_tokens": 5, "stop": "x", "logit_bias": {"5": 2}}`,
		`{"prompt": [[1, 2], [3]], "n": 2, "best_of": 3, "stream": true}`,
		`{"prompt": ["a", "b"], "temperature": 1e40, "seed": -1}`,
		`{"prompt": [1, 2, 3], "stop": ["a", ""], "top_k": -5}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req completionRequest
		if json.Unmarshal(body, &req) == nil {
			if p, aerr := req.samplingParams(engine.DefaultSamplingParams(), req.MaxTokens, 16, &grammarCache{}); aerr == nil {
				p.Validate(tok.VocabSize())
			}
			parsePrompts(req.Prompt, tok, true, 1<<20)
		}
		var chat chatRequest
		if json.Unmarshal(body, &chat) == nil {
			messages(chat.Messages)
		}
	})
}
