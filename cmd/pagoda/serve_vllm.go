package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"pagoda/sample"
	"pagoda/server"
)

// vllmServeFlags are the flags of `vllm serve` pagoda implements besides
// the engine's (see "Coming from vLLM" in docs/command-line.md).
type vllmServeFlags struct {
	dtype, generationConfig        string
	overrideGeneration             generationOverride
	seed                           optionalInt
	tensorParallel, maxLogprobs    int
	enableLogRequests, disableLogs bool
	expertParallel                 bool // --enable-expert-parallel
	disableAccessLog               bool
	logLevel                       logLevel
	origins, methods, headers      jsonList
	allowCredentials               bool
	autoToolChoice                 bool
	toolCallParser                 string
	reasoningParser                string
}

func (v *vllmServeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.dtype, "dtype", "auto", "activation type: auto or float32 (= float); pagoda computes in float32")
	fs.Var(&v.seed, "seed", "seed of the requests that bring none: each gets one derived from it and its arrival order (default: random)")
	fs.IntVar(&v.tensorParallel, "tensor-parallel-size", 1, tensorParallelHelp)
	fs.BoolVar(&v.expertParallel, "enable-expert-parallel", false, expertParallelHelp)
	v.maxLogprobs = sample.MaxLogprobs
	fs.IntVar(&v.maxLogprobs, "max-logprobs", v.maxLogprobs, "most logprobs, top_logprobs or prompt_logprobs a request may ask (400 beyond)")
	fs.StringVar(&v.generationConfig, "generation-config", genConfigAuto,
		"sampling defaults: auto (the GGUF file's general.sampling.*), vllm (vLLM's), or a folder with generation_config.json")
	fs.Var(&v.overrideGeneration, "override-generation-config",
		`JSON object over the generation config, e.g. {"temperature": 0.5, "max_new_tokens": 256}`)
	fs.BoolVar(&v.enableLogRequests, "enable-log-requests", false, "log one line per request: id, prompt tokens, sampling parameters")
	fs.BoolVar(&v.disableLogs, "disable-log-requests", false, "do not log requests (the default)")
	v.logLevel = levelInfo
	fs.Var(&v.logLevel, "uvicorn-log-level", "log level: trace, debug (adds an access line per HTTP request), info, warning, error, critical")
	fs.Var(&v.logLevel, "log-level", "same as --uvicorn-log-level")
	fs.BoolVar(&v.disableAccessLog, "disable-uvicorn-access-log", false, "no access lines at log level debug")
	v.origins, v.methods, v.headers = jsonList{"*"}, jsonList{"*"}, jsonList{"*"}
	fs.Var(&v.origins, "allowed-origins", "CORS: allowed origins, a JSON list or comma-separated")
	fs.Var(&v.methods, "allowed-methods", "CORS: allowed methods")
	fs.Var(&v.headers, "allowed-headers", "CORS: allowed request headers")
	fs.BoolVar(&v.allowCredentials, "allow-credentials", false, "CORS: allow credentials")
	fs.BoolVar(&v.autoToolChoice, "enable-auto-tool-choice", false,
		`accepted for vLLM's command line: tool_choice "auto" is always on (calls are read by --tool-call-parser)`)
	fs.StringVar(&v.toolCallParser, "tool-call-parser", "",
		"how tool calls are written in the model's output: "+strings.Join(server.ToolCallParsers(), ", ")+
			" (hermes: <tool_call>{…}</tool_call>; llama3_json: JSON objects; openai: gpt-oss's harmony);"+
			" default: chosen from the model's chat template")
	fs.StringVar(&v.reasoningParser, "reasoning-parser", "",
		"split a thinking model's chat output into reasoning_content (<think>…</think>; openai_gptoss: harmony's analysis channel) and content: "+
			strings.Join(server.ReasoningParsers(), " or ")+"; default: harmony for gpt-oss, else none")
}

// apply checks the vLLM flags and sets them on opts. --generation-config
// auto is resolved by serve, which reads the model file.
func (v *vllmServeFlags) apply(opts *server.Options) error {
	switch strings.ToLower(v.dtype) {
	case "auto", "float32", "float":
	case "bfloat16", "float16", "half":
		return fmt.Errorf("--dtype %s is not supported: pagoda computes activations in float32 (weights keep their "+
			"GGUF types; the KV cache type is --kv-cache-dtype)", v.dtype)
	default:
		return fmt.Errorf("--dtype must be auto, float32 or float, got %q", v.dtype)
	}
	switch {
	case v.tensorParallel < 1:
		return fmt.Errorf("--tensor-parallel-size must be ≥ 1, got %d", v.tensorParallel)
	case v.maxLogprobs < 0 || v.maxLogprobs > sample.MaxLogprobs:
		return fmt.Errorf("--max-logprobs must be in [0, %d], got %d", sample.MaxLogprobs, v.maxLogprobs)
	}
	ml := v.maxLogprobs
	opts.MaxLogprobs = &ml
	if v.seed.set {
		seed := v.seed.v
		opts.Seed = &seed
	}
	if p := v.toolCallParser; p != "" && !slices.Contains(server.ToolCallParsers(), p) {
		return fmt.Errorf("--tool-call-parser must be %s, got %q", strings.Join(server.ToolCallParsers(), " or "), p)
	}
	opts.EnableAutoToolChoice, opts.ToolCallParser = v.autoToolChoice, v.toolCallParser
	if p := v.reasoningParser; p != "" && !slices.Contains(server.ReasoningParsers(), p) {
		return fmt.Errorf("--reasoning-parser must be %s, got %q", strings.Join(server.ReasoningParsers(), " or "), p)
	}
	opts.ReasoningParser = v.reasoningParser
	opts.LogRequests = v.enableLogRequests && !v.disableLogs
	opts.LogAccess = v.logLevel <= levelDebug && !v.disableAccessLog
	opts.CORS = &server.CORS{AllowedOrigins: v.origins, AllowedMethods: v.methods, AllowedHeaders: v.headers,
		AllowCredentials: v.allowCredentials}
	switch v.generationConfig {
	case genConfigAuto: // serve reads the model file, then merges the override
	case genConfigVLLM:
		opts.Generation = v.overrideGeneration.merge(server.GenerationDefaults{})
	default:
		g, err := readGenerationConfig(v.generationConfig)
		if err != nil {
			return err
		}
		opts.Generation = v.overrideGeneration.merge(g)
	}
	return nil
}

// nameList is a list of names; Set (the environment variable) splits on
// spaces and commas. The command line's --served-model-name a b c is
// collected by normalizeServeArgs.
type nameList []string

func (l *nameList) String() string { return strings.Join(*l, " ") }

func (l *nameList) Set(v string) error {
	*l = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	if len(*l) == 0 {
		return fmt.Errorf("want at least one name")
	}
	return nil
}

// optionalInt is an int64 flag that knows whether it was set.
type optionalInt struct {
	v   int64
	set bool
}

func (o *optionalInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatInt(o.v, 10)
}

func (o *optionalInt) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want an integer, got %q", s)
	}
	o.v, o.set = v, true
	return nil
}

// jsonList is a list of strings written as vLLM takes it, a JSON list
// (["http://a", "http://b"]), or comma-separated.
type jsonList []string

func (l *jsonList) String() string {
	b, _ := json.Marshal([]string(*l))
	return string(b)
}

func (l *jsonList) Set(v string) error {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
		var out []string
		if err := json.Unmarshal([]byte(t), &out); err != nil {
			return fmt.Errorf("want a JSON list of strings, got %s", v)
		}
		*l = out
		return nil
	}
	*l = nil
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}
