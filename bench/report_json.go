package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Meta describes a benchmark run in its saved result.
type Meta struct {
	Date        time.Time
	Backend     string // "openai" or "openai-chat"
	BaseURL     string
	Endpoint    string
	Model       string
	Dataset     string
	NumPrompts  int
	RequestRate float64 // +Inf: all at once
	Concurrency int     // 0: no limit
	IgnoreEOS   bool
	Seed        uint64 // of the random prompts and arrival times
}

// JSON returns the result as vLLM's benchmark saves it: the configuration,
// the totals and throughputs, mean/median/std/pN of each metric in ms
// (mean_ttft_ms, p99_itl_ms, ...), and with detailed the per-request
// input_lens, output_lens, ttfts, itls, generated_texts and errors.
func (r *Report) JSON(m Meta, detailed bool) map[string]any {
	var rate any = m.RequestRate
	if math.IsInf(m.RequestRate, 1) || m.RequestRate <= 0 {
		rate = "inf"
	}
	var conc any
	if m.Concurrency > 0 {
		conc = m.Concurrency
	}
	out := map[string]any{
		"date": m.Date.Format("20060102-150405"), "backend": m.Backend, "base_url": m.BaseURL,
		"endpoint": m.Endpoint, "model_id": m.Model, "dataset_name": m.Dataset, "num_prompts": m.NumPrompts,
		"request_rate": rate, "burstiness": 1.0, "max_concurrency": conc, "ignore_eos": m.IgnoreEOS, "seed": m.Seed,
		"duration": r.Duration.Seconds(), "completed": r.Completed, "failed": r.Failed, "retries": r.Retries,
		"total_input_tokens": r.TotalInput, "total_output_tokens": r.TotalOutput,
		"request_throughput": r.RequestThroughput, "request_goodput": nil,
		"output_throughput": r.OutputThroughput, "total_token_throughput": r.TotalTokenThroughput,
		"usage_reported": r.UsageReported,
	}
	for _, name := range r.MetricOrder {
		s := r.Metrics[name]
		out["mean_"+name+"_ms"], out["median_"+name+"_ms"], out["std_"+name+"_ms"] = s.Mean, s.Median, s.Std
		for _, p := range s.Percentiles {
			out["p"+pName(p.P)+"_"+name+"_ms"] = p.Value
		}
	}
	if detailed {
		out["input_lens"], out["output_lens"], out["ttfts"], out["itls"] = r.InputLens, r.OutputLens, r.TTFTs, r.ITLs
		out["generated_texts"], out["errors"] = r.GeneratedTexts, r.Errors
	}
	return out
}

// Save writes v as indented JSON to path, creating its directory.
func Save(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
