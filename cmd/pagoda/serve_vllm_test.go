package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pagoda/engine"
	"pagoda/gguf"
	"pagoda/server"
)

// parseConfig runs serve's command-line path up to the configurations.
func parseConfig(args []string, env map[string]string) (serveFlags, engine.Config, server.Options, error) {
	var stderr bytes.Buffer
	f, err := parseServe(args, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &stderr)
	if err != nil {
		return f, engine.Config{}, server.Options{}, err
	}
	cfg, opts, err := f.config()
	return f, cfg, opts, err
}

// Each argv starts the configuration it says, or fails with the one line
// it says.
func TestServeVLLMFlags(t *testing.T) {
	genDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(genDir, "generation_config.json"),
		[]byte(`{"temperature": 0.6, "top_p": 0.9, "top_k": 20, "max_new_tokens": 64, "bos_token_id": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		f    serveFlags
		cfg  engine.Config
		opts server.Options
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(r result) bool
		wantErr string
	}{
		{name: "dtype auto", args: []string{"m.gguf", "--dtype", "auto"}, check: func(r result) bool { return r.cfg.Model == "m.gguf" }},
		{name: "auto tool choice", args: []string{"--enable-auto-tool-choice", "--tool-call-parser", "hermes"},
			check: func(r result) bool { return r.opts.EnableAutoToolChoice && r.opts.ToolCallParser == "hermes" }},
		{name: "auto tool choice without parser", args: []string{"--enable-auto-tool-choice"},
			check: func(r result) bool { return r.opts.EnableAutoToolChoice && r.opts.ToolCallParser == "" }},
		{name: "unknown tool parser", args: []string{"--tool-call-parser", "mistral"},
			wantErr: `--tool-call-parser must be hermes or llama3_json or openai, got "mistral"`},
		{name: "reasoning parser", args: []string{"--reasoning-parser", "qwen3"},
			check: func(r result) bool { return r.opts.ReasoningParser == "qwen3" }},
		{name: "reasoning parser from env", env: map[string]string{"PAGODA_REASONING_PARSER": "deepseek_r1"},
			check: func(r result) bool { return r.opts.ReasoningParser == "deepseek_r1" }},
		{name: "unknown reasoning parser", args: []string{"--reasoning_parser=granite"},
			wantErr: `--reasoning-parser must be deepseek_r1 or openai_gptoss or qwen3, got "granite"`},
		{name: "dtype float32", args: []string{"--dtype=float32"}, check: func(result) bool { return true }},
		{name: "dtype half", args: []string{"--dtype", "half"}, wantErr: "--dtype half is not supported: pagoda computes activations in float32"},
		{name: "dtype bogus", args: []string{"--dtype", "int3"}, wantErr: `--dtype must be auto, float32 or float, got "int3"`},
		{name: "dbo defaults", args: nil, check: func(r result) bool {
			return !r.cfg.DBO.Enable && r.cfg.DBO.DecodeTokenThreshold == 32 && r.cfg.DBO.PrefillTokenThreshold == 512
		}},
		{name: "dbo", args: []string{"--enable-dbo", "--dbo-prefill-token-threshold", "256"}, check: func(r result) bool {
			return r.cfg.DBO.Enable && r.cfg.DBO.DecodeTokenThreshold == 32 && r.cfg.DBO.PrefillTokenThreshold == 256
		}},
		{name: "dbo from env", env: map[string]string{"PAGODA_ENABLE_DBO": "true"}, check: func(r result) bool { return r.cfg.DBO.Enable }},
		{name: "dbo threshold", args: []string{"--enable-dbo", "--dbo-decode-token-threshold", "0"},
			wantErr: "--dbo-decode-token-threshold must be ≥ 1, got 0"},
		{name: "expert parallel off", args: []string{"--tensor-parallel-size", "2"}, check: func(r result) bool { return !r.cfg.ExpertParallel }},
		{name: "expert parallel", args: []string{"--tensor-parallel-size", "2", "--enable-expert-parallel"},
			check: func(r result) bool { return r.cfg.ExpertParallel && r.f.vllm.tensorParallel == 2 }},
		// vLLM accepts it with one rank (an expert-parallel group of one): a no-op
		{name: "expert parallel one rank", args: []string{"--enable-expert-parallel"}, check: func(r result) bool { return r.cfg.ExpertParallel }},
		{name: "expert parallel from env", env: map[string]string{"PAGODA_ENABLE_EXPERT_PARALLEL": "1"},
			check: func(r result) bool { return r.cfg.ExpertParallel }},
		{name: "partial prefills", args: []string{"--long_prefill_token_threshold", "300", "--max-num-partial-prefills=3",
			"--max-long-partial-prefills", "2"}, check: func(r result) bool {
			return r.cfg.LongPrefillTokenThreshold == 300 && r.cfg.MaxNumPartialPrefills == 3 && r.cfg.MaxLongPartialPrefills == 2
		}},
		{name: "partial prefills from env", env: map[string]string{"PAGODA_MAX_NUM_PARTIAL_PREFILLS": "4"},
			check: func(r result) bool { return r.cfg.MaxNumPartialPrefills == 4 }},
		{name: "seed", args: []string{"--seed", "42"}, check: func(r result) bool { return r.opts.Seed != nil && *r.opts.Seed == 42 }},
		{name: "no seed", args: nil, check: func(r result) bool { return r.opts.Seed == nil }},
		{name: "seed from env", env: map[string]string{"PAGODA_SEED": "-3"}, check: func(r result) bool { return *r.opts.Seed == -3 }},
		{name: "log requests", args: []string{"--enable-log-requests"}, check: func(r result) bool { return r.opts.LogRequests }},
		{name: "disable log requests", args: []string{"--disable-log-requests"}, check: func(r result) bool { return !r.opts.LogRequests }},
		{name: "uvicorn log level", args: []string{"--uvicorn-log-level", "debug"},
			check: func(r result) bool { return r.opts.LogAccess && r.f.vllm.logLevel == levelDebug }},
		{name: "log level", args: []string{"--log-level=WARNING"},
			check: func(r result) bool { return !r.opts.LogAccess && r.f.vllm.logLevel == levelWarning }},
		{name: "access log off", args: []string{"--log-level", "trace", "--disable-uvicorn-access-log"},
			check: func(r result) bool { return !r.opts.LogAccess }},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: `invalid value "loud" for flag --log-level`},
		{name: "generation config vllm", args: []string{"--generation-config", "vllm"},
			check: func(r result) bool { return r.opts.Generation.IsZero() }},
		{name: "generation config folder", args: []string{"--generation-config", genDir}, check: func(r result) bool {
			g := r.opts.Generation
			return *g.Temperature == 0.6 && *g.TopP == 0.9 && *g.TopK == 20 && *g.MaxTokens == 64 && g.MinP == nil
		}},
		{name: "override generation config", args: []string{"--generation-config", genDir, "--override-generation-config", `{"temperature": 0.1, "min_p": 0.05}`},
			check: func(r result) bool {
				g := r.opts.Generation
				return *g.Temperature == 0.1 && *g.MinP == 0.05 && *g.TopK == 20 && strings.HasSuffix(g.Source, "and --override-generation-config")
			}},
		{name: "override with vllm defaults", args: []string{"--generation-config", "vllm", "--override-generation-config", `{"max_new_tokens": 8}`},
			check: func(r result) bool { g := r.opts.Generation; return *g.MaxTokens == 8 && g.Temperature == nil }},
		{name: "override bad key", args: []string{"--override-generation-config", `{"temprature": 0.1}`},
			wantErr: "temprature: want numbers for temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens"},
		{name: "override out of range", args: []string{"--override-generation-config", `{"top_p": 3}`}, wantErr: "top_p"},
		{name: "generation config missing", args: []string{"--generation-config", t.TempDir()},
			wantErr: `--generation-config: want "auto", "vllm" or a folder with generation_config.json`},
		{name: "served names", args: []string{"m.gguf", "--served-model-name", "a", "b", "c", "--port", "9"},
			check: func(r result) bool {
				return slices.Equal(r.opts.ServedModelNames, []string{"a", "b", "c"}) && r.f.port == 9 && r.cfg.Model == "m.gguf"
			}},
		{name: "served name with =", args: []string{"--served-model-name=a"},
			check: func(r result) bool { return slices.Equal(r.opts.ServedModelNames, []string{"a"}) }},
		{name: "served names from env", env: map[string]string{"PAGODA_SERVED_MODEL_NAME": "x y"},
			check: func(r result) bool { return slices.Equal(r.opts.ServedModelNames, []string{"x", "y"}) }},
		{name: "served names command line wins", args: []string{"--served-model-name", "a"}, env: map[string]string{"PAGODA_SERVED_MODEL_NAME": "x y"},
			check: func(r result) bool { return slices.Equal(r.opts.ServedModelNames, []string{"a"}) }},
		{name: "served name missing", args: []string{"--served-model-name", "--port", "9"},
			wantErr: "flag --served-model-name needs at least one name"},
		{name: "cors", args: []string{"--allowed-origins", `["http://a", "http://b"]`, "--allowed-methods", "GET,POST", "--allow-credentials"},
			check: func(r result) bool {
				c := r.opts.CORS
				return slices.Equal(c.AllowedOrigins, []string{"http://a", "http://b"}) &&
					slices.Equal(c.AllowedMethods, []string{"GET", "POST"}) && slices.Equal(c.AllowedHeaders, []string{"*"}) && c.AllowCredentials
			}},
		{name: "cors default", check: func(r result) bool {
			return slices.Equal(r.opts.CORS.AllowedOrigins, []string{"*"}) && !r.opts.CORS.AllowCredentials
		}},
		{name: "bad cors list", args: []string{"--allowed-origins", `["a"`}, wantErr: "want a JSON list of strings"},
		{name: "tp 1", args: []string{"--tensor-parallel-size", "1"}, check: func(result) bool { return true }},
		{name: "tp 2", args: []string{"--tensor-parallel-size", "2"}, check: func(r result) bool { return r.f.vllm.tensorParallel == 2 }},
		{name: "tp 0", args: []string{"--tensor-parallel-size", "0"}, wantErr: "--tensor-parallel-size must be ≥ 1, got 0"},
		{name: "max logprobs", args: []string{"--max-logprobs", "5"}, check: func(r result) bool { return *r.opts.MaxLogprobs == 5 }},
		{name: "max logprobs 0", args: []string{"--max-logprobs", "0"}, check: func(r result) bool { return *r.opts.MaxLogprobs == 0 }},
		{name: "max logprobs too many", args: []string{"--max-logprobs", "50"}, wantErr: "--max-logprobs must be in [0, 20], got 50"},
		{name: "no-ops", args: []string{"--trust-remote-code", "--disable-fastapi-docs", "--disable-frontend-multiprocessing",
			"--tokenizer", "HuggingFaceTB/SmolLM2-135M-Instruct", "--quantization", "gguf", "--pipeline-parallel-size=1"},
			check: func(r result) bool {
				return len(r.f.notes) == 6 && strings.HasPrefix(r.f.notes[0], "--trust-remote-code has no effect on pagoda (vLLM: ")
			}},
		{name: "gpu memory", args: []string{"--gpu-memory-utilization", "0.9"},
			wantErr: "--gpu-memory-utilization 0.9 does not apply on CPU; use --kv-cache-memory"},
		{name: "quantization awq", args: []string{"--quantization", "awq"},
			wantErr: "--quantization awq: pagoda runs the quantization of the GGUF file's tensors"},
		{name: "pipeline 2", args: []string{"--pipeline-parallel-size", "2"}, wantErr: "pipeline parallelism is not implemented"},
		{name: "lora", args: []string{"--enable-lora"}, wantErr: "--enable-lora: LoRA adapters are not implemented"},
		{name: "no-op with a value", args: []string{"--trust-remote-code=true"}, wantErr: "flag --trust-remote-code takes no value"},
		{name: "value missing", args: []string{"--tokenizer"}, wantErr: "flag --tokenizer needs a value"},
		{name: "underscores", args: []string{"--max_model_len", "256", "--enforce_eager"},
			check: func(r result) bool { return r.cfg.MaxModelLen == 256 && r.cfg.EnforceEager }},
		{name: "enforce eager", args: []string{"--enforce-eager"}, check: func(r result) bool { return r.cfg.EnforceEager }},
		{name: "unknown", args: []string{"--frobnicate"}, wantErr: "unknown flag --frobnicate (run `pagoda serve --help` for the flags)"},
		{name: "typo", args: []string{"--max-model-length", "5"}, wantErr: "unknown flag --max-model-length (did you mean --max-model-len?)"},
		{name: "typo of a vLLM flag", args: []string{"--gpu-memory-utilisation", "0.9"},
			wantErr: "unknown flag --gpu-memory-utilisation (did you mean --gpu-memory-utilization?)"},
		{name: "bad int", args: []string{"--port", "eighty"}, wantErr: `invalid value "eighty" for flag --port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, cfg, opts, err := parseConfig(tc.args, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(result{f, cfg, opts}) {
				t.Errorf("flags %+v\nconfig %+v\noptions %+v", f.vllm, cfg, opts)
			}
		})
	}
}

// A refused or unknown flag exits 2 with exactly one line on stderr; --help
// still prints the usage, on stdout.
func TestServeFlagErrorsAreOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--gpu-memory-utilization", "0.9"},
		{"serve", "--dtype", "bfloat16"},
		{"serve", "--no-such-flag"},
		{"serve", "--port", "x"},
		{"serve", "--tensor-parallel-size", "0"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "pagoda serve: ") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line", args, code, stderr)
		}
	}
	code, stdout, stderr := runCLI("serve", "--help")
	if code != 0 || !strings.Contains(stdout, "usage: pagoda serve") || !strings.Contains(stdout, "--served-model-name") || stderr != "" {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// Help is recognized wherever it is, also after other flags.
func TestServeHelpAfterFlags(t *testing.T) {
	_, _, _, err := parseConfig([]string{"--port", "9", "-h"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"max-model-len", "max-model-length", 3}, {"port", "port", 0}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// Every entry of the vLLM table is well formed and does not shadow one of
// pagoda's own flags.
func TestVLLMFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	seen := map[string]bool{}
	for _, v := range vllmFlags {
		switch {
		case seen[v.name]:
			t.Errorf("--%s is listed twice", v.name)
		case fs.Lookup(v.name) != nil:
			t.Errorf("--%s is both a pagoda flag and in the vLLM table", v.name)
		case v.meaning == "":
			t.Errorf("--%s has no meaning", v.name)
		case v.accept != nil && (v.refuse == "" || !v.value):
			t.Errorf("--%s accepts some values but has no reason to refuse the others, or takes no value", v.name)
		}
		seen[v.name] = true
	}
}

func TestLevelFilter(t *testing.T) {
	var buf bytes.Buffer
	f := levelFilter{w: &buf, min: levelWarning}
	for _, line := range []string{
		"2026/01/02 15:04:05 INFO hidden\n",
		"2026/01/02 15:04:05 DEBUG hidden\n",
		"2026/01/02 15:04:05 WARNING shown\n",
		"2026/01/02 15:04:05 ERROR shown\n",
		"2026/01/02 15:04:05 http: Accept error: shown\n",
	} {
		if n, err := f.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := strings.Count(buf.String(), "shown"); got != 3 || strings.Contains(buf.String(), "hidden") {
		t.Errorf("filtered output %q", buf.String())
	}
	var l logLevel
	if err := l.Set("Warn"); err != nil || l != levelWarning {
		t.Errorf("Set(Warn) = %v, %v", l, err)
	}
}

// --generation-config auto reads llama.cpp's general.sampling.* keys;
// a file without them gives no defaults, and out-of-range values fail.
func TestGGUFGenerationDefaults(t *testing.T) {
	write := func(kv map[string]any) string {
		w := gguf.NewWriter()
		w.AddKV("general.architecture", "llama")
		for k, v := range kv {
			w.AddKV(k, v)
		}
		p := filepath.Join(t.TempDir(), "m.gguf")
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, err := ggufGenerationDefaults(write(map[string]any{"general.sampling.temp": float32(0.5),
		"general.sampling.top_k": int32(40), "general.sampling.penalty_repeat": float32(1.25)}))
	if err != nil {
		t.Fatal(err)
	}
	if *g.Temperature != 0.5 || *g.TopK != 40 || *g.RepetitionPenalty != 1.25 || g.TopP != nil || g.MaxTokens != nil ||
		!strings.Contains(g.Source, "general.sampling") {
		t.Errorf("defaults %s from %q", g, g.Source)
	}
	if g, err := ggufGenerationDefaults(write(nil)); err != nil || !g.IsZero() {
		t.Errorf("no keys: %v, %v", g, err)
	}
	if _, err := ggufGenerationDefaults(write(map[string]any{"general.sampling.top_p": float32(7)})); err == nil {
		t.Error("top_p 7 was accepted")
	}
}
