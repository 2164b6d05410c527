#!/usr/bin/env python3
"""Prints scripts/tp-netns.sh's tables from its raw results.

    tp-netns-report.py OUT REPS "CONFIGS" "RATES" "WORKLOADS"

OUT holds r{rep}-{config}-{rate}-{workload}.json (pagoda bench serve --save-result) and the
/metrics scrapes before and after each run (.before.prom, .after.prom). tp1 has no link: its
runs are named after the first rate and stand in every rate's table. Per configuration: the
mean ± sample standard deviation over the repetitions of mean TTFT, request throughput and
output tokens/s; the paired ratio to tp2 in the same repetition (mean, min–max); and the mean
per-step breakdown rank 0's engine exports (pagoda_step_*_seconds_total, divided by the steps
counted by vllm:iteration_tokens_total_count).
"""
import json
import os
import re
import statistics
import sys

STEP_PARTS = ["forward", "compute", "communication", "wait"]


def prom(path):
    """Sums each metric's samples (over labels) in a Prometheus text file."""
    vals = {}
    if not os.path.exists(path):
        return vals
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = re.match(r"([^\s{]+)(\{[^}]*\})?\s+(\S+)", line)
            if m:
                vals[m[1]] = vals.get(m[1], 0.0) + float(m[3])
    return vals


def load(out, name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        res = json.load(f)
    before, after = prom(os.path.join(out, name + ".before.prom")), prom(os.path.join(out, name + ".after.prom"))
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    steps = delta.get("pagoda_step_forward_seconds_count", 0.0)
    step = {}
    for part in STEP_PARTS:
        key = "pagoda_step_%s_seconds_sum" % part
        if steps > 0 and key in delta:
            step[part] = delta[key] / steps * 1e3
    return {
        "ttft": res["mean_ttft_ms"],
        "rps": res["request_throughput"],
        "tps": res["output_throughput"],
        "failed": res.get("failed", 0),
        "steps": steps,
        "split": delta.get("pagoda_dbo_split_steps_total", 0.0),
        "step": step,
    }


def spread(xs, fmt):
    if not xs:
        return "–"
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt + " ± " + fmt) % (statistics.mean(xs), statistics.stdev(xs))


def ratio(xs):
    if not xs:
        return "–"
    return "%.3f (%.3f–%.3f)" % (statistics.mean(xs), min(xs), max(xs))


def table(out, reps, configs, rates, workload, rate):
    first = rates[0]
    runs = {}
    for cfg in configs:
        for r in range(reps):
            run = load(out, "r%d-%s-%s-%s" % (r, cfg, first if cfg == "tp1" else rate, workload))
            if run:
                runs[(cfg, r)] = run
    if not runs:
        return ""
    lines = [
        "#### %s, link %s (%d repetitions)" % (workload, rate, reps),
        "",
        "| config | mean TTFT (ms) | req/s | output tok/s | TTFT / tp2 | req/s / tp2 | tok/s / tp2 "
        "| steps (split) | forward | compute | communication | waiting |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cfg in configs:
        rs = [runs[(cfg, r)] for r in range(reps) if (cfg, r) in runs]
        if not rs:
            continue
        pairs = [(runs[(cfg, r)], runs[("tp2", r)]) for r in range(reps) if (cfg, r) in runs and ("tp2", r) in runs]
        rel = lambda k: [a[k] / b[k] for a, b in pairs if b[k] > 0]
        step = lambda part: spread([x["step"][part] for x in rs if part in x["step"]], "%.1f")
        name = cfg + (" (no link)" if cfg == "tp1" else "")
        if any(x["failed"] for x in rs):
            name += " (%d failed requests)" % sum(x["failed"] for x in rs)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %.0f (%.0f) | %s | %s | %s | %s |" % (
            name, spread([x["ttft"] for x in rs], "%.0f"), spread([x["rps"] for x in rs], "%.3f"),
            spread([x["tps"] for x in rs], "%.2f"), ratio(rel("ttft")), ratio(rel("rps")), ratio(rel("tps")),
            statistics.mean([x["steps"] for x in rs]), statistics.mean([x["split"] for x in rs]),
            step("forward"), step("compute"), step("communication"), step("wait")))
    return "\n".join(lines) + "\n"


def main():
    out, reps = sys.argv[1], int(sys.argv[2])
    configs, rates, workloads = sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
    print("### Tensor parallelism across a shaped veth link (scripts/tp-netns.sh)\n")
    print("Means ± sample standard deviation over the repetitions; ratios are paired (same repetition),")
    print("mean (min–max). Steps: mean per run (split: run as two micro-batches); forward, compute,")
    print("communication, waiting: rank 0's engine step statistics, mean ms per step (the steps include")
    print("those of bench serve's initial single-prompt test request).\n")
    for w in workloads:
        for rate in rates:
            t = table(out, reps, configs, rates, w, rate)
            if t:
                print(t)


if __name__ == "__main__":
    main()
