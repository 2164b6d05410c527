#!/usr/bin/env bash
# Speculative decoding's speed-up, measured in one run: the default model
# served without speculation, with ngram and with suffix decoding (three
# servers, ports PORT..PORT+2, fresh each round); `pagoda bench serve`
# (greedy) at concurrency 1 (18 prompts) and 32 (128) on the input-grounded
# workload (testdata/bench/input-grounded.jsonl) and on random prompts, each
# test run on the three servers back to back. Prints output tok/s per side
# (the median of the rounds) and the median and range of each round's ratio
# to no speculation.
#
#   scripts/bench-spec.sh [ROUNDS]      (BIN, MODEL, PORT override)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
BIN=${BIN:-bin/pagoda}
MODEL=${MODEL:-smollm2}
PORT=${PORT:-18555}
OUT=$(mktemp -d)
MODES=(off ngram suffix)
SERVERS=()
trap 'kill "${SERVERS[@]}" 2>/dev/null || true; rm -rf "$OUT"' EXIT
[ -x "$BIN" ] || make -s build
declare -A SPEC=([off]="" [ngram]='{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
	[suffix]='{"method": "suffix", "num_speculative_tokens": 16}')
# run WORKLOAD C MODE ROUND PORT: one pagoda bench serve against the server on PORT.
run() {
	local data=(--dataset-name jsonl --dataset-path testdata/bench/input-grounded.jsonl)
	[ "$1" = random ] && data=(--dataset-name random --random-input-len 256 --random-output-len 128 --ignore-eos)
	"$BIN" bench serve --port "$5" --endpoint /v1/chat/completions "${data[@]}" \
		--num-prompts "$(($2 == 1 ? 18 : 128))" --max-concurrency "$2" --seed 1 --disable-tqdm \
		--save-result --result-dir "$OUT" --result-filename "$1-c$2-$3-$4.json" >/dev/null
}
for round in $(seq "$ROUNDS"); do
	# A fresh server per mode and round (a cold prefix cache), all three up at once, so that
	# each measurement runs right after the other modes' same one: seconds apart, not minutes.
	SERVERS=()
	for i in "${!MODES[@]}"; do
		mode=${MODES[$i]}
		args=(serve "$MODEL" --port $((PORT + i)) --disable-log-stats)
		[ -n "${SPEC[$mode]}" ] && args+=(--speculative-config "${SPEC[$mode]}")
		"$BIN" "${args[@]}" >"$OUT/server-$mode-$round.log" 2>&1 &
		SERVERS+=($!)
	done
	for i in "${!MODES[@]}"; do
		for _ in $(seq 120); do curl -sf "http://127.0.0.1:$((PORT + i))/health" >/dev/null && break; sleep 0.5; done
	done
	for test in "grounded 1" "random 1" "grounded 32" "random 32"; do
		for k in 0 1 2; do # the modes in turn, starting with a different one each round
			i=$(((k + round) % 3))
			run $test "${MODES[$i]}" "$round" $((PORT + i))
		done
	done
	kill "${SERVERS[@]}"; wait "${SERVERS[@]}" 2>/dev/null || true
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def tput(work, c, mode, r):
    return json.load(open(f"{out}/{work}-c{c}-{mode}-{r}.json"))["output_throughput"]
print("Output tok/s, medians of the rounds; ×: the median (range) of each round's ratio to no speculation")
print("(a round's three runs of a test are back to back).")
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
