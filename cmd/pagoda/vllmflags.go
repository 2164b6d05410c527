package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// vllmFlag is a flag of `vllm serve` that is not one of pagoda's own: it is
// accepted and has no effect on pagoda (a no-op, with the reason), or it is
// refused with a one-line reason. Flags with accept values are no-ops for
// those values and refused for any other.
type vllmFlag struct {
	name    string
	value   bool     // takes a value
	accept  []string // values accepted as a no-op; nil: every value (or refused when refuse is set)
	refuse  string   // why it is refused ("" for a pure no-op)
	meaning string   // vLLM's meaning, and what pagoda does instead
}

// vllmFlags are the `vllm serve` flags pagoda recognizes without
// implementing them. The "Coming from vLLM" table of docs/command-line.md lists them.
var vllmFlags = []vllmFlag{
	{name: "trust-remote-code", meaning: "run the model repository's Python code; GGUF files carry no code"},
	{name: "disable-fastapi-docs", meaning: "hide the OpenAPI docs pages; pagoda serves none"},
	{name: "disable-frontend-multiprocessing", meaning: "run the API server in the engine's process; pagoda is one process"},
	{name: "enable-request-id-headers", meaning: "echo X-Request-Id; pagoda always does"},
	{name: "enable-prompt-tokens-details", meaning: "return usage.prompt_tokens_details; pagoda always does"},
	{name: "disable-custom-all-reduce", meaning: "a GPU all-reduce kernel; no GPU"},
	{name: "enable-chunked-prefill", meaning: "split long prompts over steps; pagoda always does (within --max-num-batched-tokens)"},
	{name: "tokenizer", value: true, meaning: "the tokenizer's repository; pagoda uses the tokenizer inside the GGUF file"},
	{name: "tokenizer-mode", value: true, meaning: "slow or fast Hugging Face tokenizer; pagoda has its own"},
	{name: "revision", value: true, meaning: "the model repository's revision; pagoda serves a local GGUF file"},
	{name: "tokenizer-revision", value: true, meaning: "the tokenizer repository's revision; the tokenizer is in the GGUF file"},
	{name: "download-dir", value: true, meaning: "where weights are downloaded; pagoda serves a local GGUF file"},
	{name: "max-log-len", value: true, meaning: "characters of a prompt logged; pagoda logs token counts, never prompt text"},
	{name: "max-seq-len-to-capture", value: true, meaning: "the longest CUDA-graph sequence; pagoda's step plans follow its buckets"},
	{name: "cuda-graph-sizes", value: true, meaning: "CUDA-graph batch sizes; pagoda's step plans follow its buckets (--bucketing flags)"},
	{name: "compilation-config", value: true, meaning: "torch.compile settings; pagoda compiles nothing at run time"},
	{name: "max-parallel-loading-workers", value: true, meaning: "weight-loading threads; pagoda maps the GGUF file"},
	{name: "distributed-executor-backend", value: true, meaning: "Ray or multiprocessing workers; pagoda has one process"},
	{name: "response-role", value: true, accept: []string{"assistant"}, refuse: "only the role assistant is supported",
		meaning: "the role of chat responses"},
	{name: "pipeline-parallel-size", value: true, accept: []string{"1"}, refuse: "pipeline parallelism is not implemented; use 1",
		meaning: "pipeline stages"},
	{name: "data-parallel-size", value: true, accept: []string{"1"},
		refuse: "data parallelism is not implemented; run several servers behind a router", meaning: "engine replicas"},
	{name: "quantization", value: true, accept: []string{"gguf"},
		refuse: "pagoda runs the quantization of the GGUF file's tensors", meaning: "the weights' quantization method"},
	{name: "load-format", value: true, accept: []string{"auto", "gguf"}, refuse: "pagoda loads GGUF files only",
		meaning: "the weights' file format"},
	{name: "device", value: true, accept: []string{"auto", "cpu"}, refuse: "pagoda runs on the CPU", meaning: "the device"},
	{name: "task", value: true, accept: []string{"auto", "generate"}, refuse: "pagoda serves text generation only",
		meaning: "the model's task"},
	{name: "runner", value: true, accept: []string{"auto", "generate"}, refuse: "pagoda serves text generation only",
		meaning: "the model runner"},
	{name: "gpu-memory-utilization", value: true, refuse: "does not apply on CPU; use --kv-cache-memory",
		meaning: "the fraction of GPU memory for weights and KV cache"},
	{name: "kv-cache-memory-bytes", value: true, refuse: "use --kv-cache-memory (the same size, e.g. 2GiB)",
		meaning: "the KV cache size"},
	{name: "cpu-offload-gb", value: true, refuse: "does not apply on CPU: the weights are in RAM already",
		meaning: "GPU weights offloaded to CPU memory"},
	{name: "enable-lora", refuse: "LoRA adapters are not implemented", meaning: "serve LoRA adapters"},
	{name: "lora-modules", value: true, refuse: "LoRA adapters are not implemented", meaning: "LoRA adapters to serve"},
	{name: "limit-mm-per-prompt", value: true, refuse: "multimodal inputs are not implemented",
		meaning: "images, audio or video per prompt"},
	{name: "ssl-keyfile", value: true, refuse: "TLS is not implemented; put a TLS proxy in front",
		meaning: "the TLS key"},
	{name: "ssl-certfile", value: true, refuse: "TLS is not implemented; put a TLS proxy in front",
		meaning: "the TLS certificate"},
	{name: "otlp-traces-endpoint", value: true, refuse: "tracing is not implemented", meaning: "OpenTelemetry traces"},
	{name: "enable-sleep-mode", refuse: "sleep mode is not implemented", meaning: "free GPU memory while idle"},
	{name: "no-enable-chunked-prefill", refuse: "pagoda always chunks long prompts; set --max-num-batched-tokens to " +
		"--max-model-len to compute every prompt in one step", meaning: "compute every prompt in one step"},
}

// vllmFlagNames lists vllmFlags' names, for suggestions.
func vllmFlagNames() []string {
	names := make([]string, len(vllmFlags))
	for i, v := range vllmFlags {
		names[i] = v.name
	}
	return names
}

func lookupVLLMFlag(name string) (vllmFlag, bool) {
	i := slices.IndexFunc(vllmFlags, func(v vllmFlag) bool { return v.name == name })
	if i < 0 {
		return vllmFlag{}, false
	}
	return vllmFlags[i], true
}

// serveArgs is the command line of `pagoda serve` after normalizeServeArgs.
type serveArgs struct {
	args        []string // for fs.Parse: pagoda's own flags, as --name=value
	positional  []string // the positional arguments, in order
	servedNames []string // every --served-model-name value, in order
	notes       []string // one line per no-op vLLM flag given
}

// normalizeServeArgs accepts the command line as `vllm serve` does: flags
// and positional arguments in any order ("--" ends the flags); flag names
// with dashes or underscores; --served-model-name followed by one or more
// names (up to the next token starting with "-"), which it collects; the
// vLLM flags of vllmFlags, dropped with a note (no-op) or refused with a
// one-line error. An unknown flag is an error naming the closest known
// one. -h/--help[=TOPIC] anywhere sets the help flag and returns
// flag.ErrHelp, whatever else is wrong; otherwise the first error is
// returned.
func normalizeServeArgs(fs *flag.FlagSet, in []string) (serveArgs, error) {
	var out serveArgs
	var first error
	help := false
	sc := &argScanner{in: in}
	for ; sc.i < len(in); sc.i++ {
		tok := in[sc.i]
		if tok == "--" {
			out.positional = append(out.positional, in[sc.i+1:]...)
			break
		}
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			out.positional = append(out.positional, tok)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(tok, "-"), "=")
		sc.name, sc.value, sc.hasValue = strings.ReplaceAll(name, "_", "-"), value, hasValue
		var err error
		switch {
		case isHelpFlag(sc.name):
			help = true
			if !hasValue {
				value = "true"
			}
			fs.Lookup(sc.name).Value.Set(value)
		case sc.name == "served-model-name":
			err = sc.servedNames(&out)
		case fs.Lookup(sc.name) != nil:
			err = sc.own(fs.Lookup(sc.name), &out)
		default:
			err = sc.vllm(fs, &out)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if help {
		return out, flag.ErrHelp
	}
	return out, first
}

// argScanner walks a command line; name, value and hasValue describe the
// flag at index i.
type argScanner struct {
	in          []string
	i           int
	name, value string
	hasValue    bool
}

// next consumes the flag's value: after "=", else the next token.
func (sc *argScanner) next() (string, error) {
	if sc.hasValue {
		return sc.value, nil
	}
	if sc.i+1 >= len(sc.in) {
		return "", fmt.Errorf("flag --%s needs a value", sc.name)
	}
	sc.i++
	return sc.in[sc.i], nil
}

// servedNames collects --served-model-name=a, or --served-model-name a b c
// up to the next token starting with "-" (argparse's nargs="+").
func (sc *argScanner) servedNames(out *serveArgs) error {
	names := []string{}
	if sc.hasValue {
		names = append(names, sc.value)
	}
	for ; !sc.hasValue && sc.i+1 < len(sc.in) && !strings.HasPrefix(sc.in[sc.i+1], "-"); sc.i++ {
		names = append(names, sc.in[sc.i+1])
	}
	if len(names) == 0 {
		return errors.New("flag --served-model-name needs at least one name")
	}
	out.servedNames = append(out.servedNames, names...)
	return nil
}

// own passes one of pagoda's flags on, as --name or --name=value.
func (sc *argScanner) own(f *flag.Flag, out *serveArgs) error {
	if isBoolFlag(f) || sc.hasValue {
		out.args = append(out.args, "--"+sc.name+eqValue(sc.value, sc.hasValue))
		return nil
	}
	v, err := sc.next()
	if err != nil {
		return err
	}
	out.args = append(out.args, "--"+sc.name+"="+v)
	return nil
}

// vllm drops a no-op vLLM flag with a note, or refuses it with its reason;
// any other flag is unknown.
func (sc *argScanner) vllm(fs *flag.FlagSet, out *serveArgs) error {
	vf, ok := lookupVLLMFlag(sc.name)
	if !ok {
		return unknownFlagError(fs, sc.name, vllmFlagNames())
	}
	v := ""
	if vf.value {
		var err error
		if v, err = sc.next(); err != nil {
			return err
		}
	} else if sc.hasValue {
		return fmt.Errorf("flag --%s takes no value", sc.name)
	}
	if vf.refuse != "" && (vf.accept == nil || !slices.Contains(vf.accept, strings.ToLower(v))) {
		sep := ": "
		if strings.HasPrefix(vf.refuse, "does ") { // "--gpu-memory-utilization does not apply on CPU"
			sep = " "
		}
		return fmt.Errorf("--%s%s%s%s", sc.name, spaceValue(v), sep, vf.refuse)
	}
	out.notes = append(out.notes, fmt.Sprintf("--%s%s has no effect on pagoda (vLLM: %s)", sc.name, spaceValue(v), vf.meaning))
	return nil
}

func eqValue(v string, has bool) string {
	if has {
		return "=" + v
	}
	return ""
}

func spaceValue(v string) string {
	if v == "" {
		return ""
	}
	return " " + v
}
