package main

import (
	"flag"
	"strings"

	"pagoda/bucket"
	"pagoda/internal/modelcache"
)

// serveAbout is the text of `pagoda serve --help` above the flags.
func serveAbout() string {
	return "Serves MODEL over the OpenAI-compatible API: a GGUF file, or a reference (" + defaultModelRef + " (the default),\n" +
		"org/repo[:QUANT], org/repo/file.gguf, hf.co/org/repo[:QUANT], https://huggingface.co/org/repo/..., " + modelcache.Gemma3Name + "; see\n" +
		"pagoda pull --help). Every flag can also be set by PAGODA_<FLAG> (PAGODA_PORT=8080, PAGODA_MAX_NUM_SEQS=16);\n" +
		"the command line wins. vLLM's flags that do not apply are accepted with a note or refused (--help=vllm)."
}

// serveHelpGroups groups serve's flags as `vllm serve --help` groups them,
// by vLLM's config classes (ModelConfig, CacheConfig, …), with pagoda's
// own flags where they belong. Every flag is in exactly one group (a test
// checks it); the vllm group lists the vLLM flags pagoda only recognizes.
func serveHelpGroups() []flagGroup {
	return []flagGroup{
		{key: "model", vllm: "ModelConfig", title: "Model", lines: flagLines("model", "served-model-name",
			"max-model-len", "dtype", "seed", "max-logprobs", "generation-config", "override-generation-config",
			"enforce-eager", "exact-arithmetic", "no-repack")},
		{key: "server", vllm: "Frontend", title: "Server", lines: flagLines("host", "port", "api-key",
			"chat-template", "chat-template-fallback", "pooling", "allowed-origins", "allowed-methods", "allowed-headers", "allow-credentials",
			"max-request-body", "max-queue", "shutdown-timeout", "responses-store-size", "responses-store-ttl")},
		{key: "tools", vllm: "StructuredOutputsConfig", title: "Structured outputs, tools and reasoning",
			lines: flagLines("enable-auto-tool-choice", "tool-call-parser", "reasoning-parser")},
		{key: "scheduler", vllm: "SchedulerConfig", title: "Scheduler", lines: flagLines("max-num-seqs",
			"max-num-batched-tokens", "long-prefill-token-threshold", "max-num-partial-prefills",
			"max-long-partial-prefills", "preemption-mode", "speculative-config")},
		{key: "cache", vllm: "CacheConfig", title: "KV cache", lines: flagLines("block-size", "kv-cache-memory",
			"num-gpu-blocks-override", "swap-space", "kv-cache-dtype", "enable-prefix-caching no-enable-prefix-caching")},
		{key: "parallel", vllm: "ParallelConfig", title: "Parallelism", lines: flagLines("tensor-parallel-size",
			"enable-expert-parallel", "tp-step-timeout", "enable-dbo", "dbo-decode-token-threshold", "dbo-prefill-token-threshold", "threads")},
		{key: "compilation", vllm: "CompilationConfig", title: "Step plans and shape buckets",
			lines: append(flagLines("bucketing-strategy", "max-capture-tokens", "merged-prefill", "long-context",
				"contiguous-pa"), patternLine("{prompt,decode}-{bs,seq,block}-bucket-{min,step,max}", "N",
				"linear strategy: override one bucket range setting (also PAGODA_PROMPT_BS_BUCKET_MIN, …)"))},
		{key: "logging", vllm: "ObservabilityConfig", title: "Logging", lines: flagLines("disable-log-stats",
			"enable-log-requests", "disable-log-requests", "uvicorn-log-level log-level", "disable-uvicorn-access-log")},
		{key: "vllm", title: "vLLM flags accepted without effect (no-op) or refused", rows: vllmFlagRows(), hidden: true},
	}
}

// vllmFlagRows shows the table of vLLM flags pagoda recognizes without
// implementing them.
func vllmFlagRows() [][2]string {
	rows := make([][2]string, len(vllmFlags))
	for i, v := range vllmFlags {
		left := "--" + v.name
		if v.value {
			left += " VALUE"
		}
		what := "no-op: " + v.meaning
		switch {
		case v.refuse != "" && v.accept != nil:
			what = "no-op for " + strings.Join(v.accept, ", ") + ", else refused: " + v.refuse
		case v.refuse != "":
			what = "refused: " + v.refuse
		}
		rows[i] = [2]string{left, what}
	}
	return rows
}

// registerBucketFlags registers the bucketing flags of package bucket on
// fs, except its --prefix-caching: serve has vLLM's --enable-prefix-caching,
// which also sets o.PrefixCaching (a flag vllm-gaudi only reads).
func registerBucketFlags(fs *flag.FlagSet, o *bucket.Options) {
	all := flag.NewFlagSet("bucketing", flag.ContinueOnError)
	o.RegisterFlags(all)
	all.VisitAll(func(f *flag.Flag) {
		if f.Name != "prefix-caching" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
}
