#!/usr/bin/env bash
# Speculative decoding beside llama-server's: the default model, the
# input-grounded workload (testdata/bench/input-grounded.jsonl) at concurrency
# 1, greedy, chat endpoint, the same client (pagoda bench serve) for both:
# pagoda without speculation, with ngram, with suffix; llama-server (the
# llama-cpp-python 0.3.36 build, scripts/build-llama-cpp.sh) without
# speculation and with each of its n-gram speculative types. Prints output
# tok/s and each server's ratio to its own run without speculation.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/pagoda}
LLAMA=${LLAMA:-$HOME/.cache/pagoda/llama.cpp-0.3.36/build/bin/llama-server}
MODEL=${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/SmolLM2-135M-Instruct.Q4_1.gguf
PORT=${PORT:-18556}
OUT=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
[ -x "$BIN" ] || make -s build
[ -x "$LLAMA" ] || bash scripts/build-llama-cpp.sh
run() { # name, then the server command
	local name=$1; shift
	"$@" >"$OUT/$name.log" 2>&1 &
	SERVER=$!
	for _ in $(seq 240); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
	"$BIN" bench serve --port "$PORT" --endpoint /v1/chat/completions --dataset-name jsonl \
		--dataset-path testdata/bench/input-grounded.jsonl --num-prompts 18 --max-concurrency 1 --seed 1 \
		--disable-tqdm --save-result --result-dir "$OUT" --result-filename "$name.json" >/dev/null
	kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
}
run pagoda-off "$BIN" serve "$MODEL" --port "$PORT" --disable-log-stats
run pagoda-ngram "$BIN" serve "$MODEL" --port "$PORT" --disable-log-stats \
	--speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
run pagoda-suffix "$BIN" serve "$MODEL" --port "$PORT" --disable-log-stats --speculative-config '{"method": "suffix", "num_speculative_tokens": 16}'
LS=("$LLAMA" -m "$MODEL" --port "$PORT" -t 2 -c 8192 --parallel 1 --jinja)
run llama-off "${LS[@]}"
for t in ngram-simple ngram-map-k ngram-mod ngram-cache; do run "llama-$t" "${LS[@]}" --spec-type "$t"; done
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
t = lambda n: json.load(open(f"{out}/{n}.json"))["output_throughput"]
print("| server | speculation | output tok/s | × its own plain decoding |")
print("| --- | --- | ---: | ---: |")
for srv, modes in (("pagoda", ["off", "ngram", "suffix"]), ("llama", ["off", "ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache"])):
    base = t(f"{srv}-off")
    for m in modes:
        if os.path.exists(f"{out}/{srv}-{m}.json"):
            print(f"| {'pagoda' if srv == 'pagoda' else 'llama-server'} | {m} | {t(f'{srv}-{m}'):.1f} | {t(f'{srv}-{m}') / base:.2f}× |")
PY
