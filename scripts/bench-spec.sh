#!/usr/bin/env bash
# Speculative decoding's speed-up, measured in one run: the default model
# served without speculation, with ngram and with suffix decoding, alternated
# twice; for each, `pagoda bench serve` (greedy) at concurrency 1 and 32 on
# the input-grounded workload (testdata/bench/input-grounded.jsonl) and on
# random prompts. Prints output tok/s per side (the median of the rounds)
# and the median and range of each round's ratio to no speculation.
#
#   scripts/bench-spec.sh [ROUNDS]      (BIN, MODEL, PORT override)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
BIN=${BIN:-bin/pagoda}
MODEL=${MODEL:-smollm2}
PORT=${PORT:-18555}
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
[ -x "$BIN" ] || make -s build
declare -A SPEC=([off]="" [ngram]='{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
	[suffix]='{"method": "suffix", "num_speculative_tokens": 16}')
for round in $(seq "$ROUNDS"); do
	for mode in off ngram suffix; do
		args=(serve "$MODEL" --port "$PORT" --disable-log-stats)
		[ -n "${SPEC[$mode]}" ] && args+=(--speculative-config "${SPEC[$mode]}")
		"$BIN" "${args[@]}" >"$OUT/server-$mode.log" 2>&1 &
		SERVER=$!
		for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
		for c in 1 32; do
			n=$((c == 1 ? 18 : 64))
			"$BIN" bench serve --port "$PORT" --endpoint /v1/chat/completions --dataset-name jsonl \
				--dataset-path testdata/bench/input-grounded.jsonl --num-prompts "$n" --max-concurrency "$c" \
				--seed 1 --disable-tqdm --save-result --result-dir "$OUT" \
				--result-filename "grounded-c$c-$mode-$round.json" >/dev/null
			"$BIN" bench serve --port "$PORT" --endpoint /v1/chat/completions --dataset-name random \
				--random-input-len 256 --random-output-len 128 --ignore-eos --num-prompts "$n" \
				--max-concurrency "$c" --seed 1 --disable-tqdm --save-result --result-dir "$OUT" \
				--result-filename "random-c$c-$mode-$round.json" >/dev/null
		done
		kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
	done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def tput(work, c, mode, r):
    return json.load(open(f"{out}/{work}-c{c}-{mode}-{r}.json"))["output_throughput"]
print("Output tok/s, medians of the rounds; ×: the median (range) of each round's ratio to no speculation")
print("(the three servers of a round run minutes apart at most).")
print()
print("| workload | concurrency | off tok/s | ngram tok/s (×) | suffix tok/s (×) |")
print("| --- | ---: | ---: | ---: | ---: |")
for work in ("grounded", "random"):
    for c in (1, 32):
        off = [tput(work, c, "off", r) for r in range(1, rounds + 1)]
        cells = []
        for m in ("ngram", "suffix"):
            on = [tput(work, c, m, r) for r in range(1, rounds + 1)]
            ratios = [a / b for a, b in zip(on, off)]
            cells.append(f"{statistics.median(on):.1f} ({statistics.median(ratios):.2f}×, {min(ratios):.2f}–{max(ratios):.2f})")
        print(f"| {work} | {c} | {statistics.median(off):.1f} | " + " | ".join(cells) + " |")
PY
