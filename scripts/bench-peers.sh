#!/usr/bin/env bash
# Serves one GGUF file with pagoda and with llama.cpp's llama-server, one after the other, under
# the same `pagoda bench serve` workload, and prints both and the ratios pagoda / llama-server.
#
#   scripts/bench-peers.sh [MODEL.gguf]
#
# For each concurrency (1, 8 and 32) both servers are started fresh (no warm prefix cache), on
# the same model file and the same number of threads, and measured with
#   pagoda bench serve --dataset-name random --random-input-len 256 --random-output-len 128
#                      --ignore-eos --max-concurrency C --num-prompts N
# with N = 4·C, at least 8 and at most 64 (a few waves of requests per run), or the N given for
# each concurrency in NUM_PROMPTS (e.g. "4 16 32", a shorter run). The order of the
# two servers alternates between concurrencies, so that a drift of the machine's speed does not
# always favour the same one. Columns: output tokens/s, mean time to first token, mean time per
# output token (after the first) and failed requests, for each server, and pagoda / llama-server.
#
# llama-server and llama-bench are built once by scripts/build-llama-cpp.sh from the llama.cpp
# sources in the pinned llama-cpp-python source distribution (cached build; CMake Release,
# native). llama-server runs with -np 32 -cb (32 parallel slots, continuous batching) and a
# context of 32 × 384 tokens (every slot holds a 256 + 128-token request); pagoda with its
# defaults. llama.cpp's extra buffer types (weight repacking: AMX tiles on Xeons that have them,
# interleaved rows for Q4_0, IQ4_NL and Q4_K on x86) are its default and stay on when they work
# here, which llama-bench checks first: on machines whose kernel does not grant AMX tile state
# to the process they crash, and llama-server then runs with --no-repack (for Q4_1, as in the
# default model, that only leaves out AMX: llama.cpp repacks no Q4_1 for AVX2/AVX-512);
# LLAMA_EXTRA_BUFTS=on|off (default auto) overrides. Environment: THREADS (default 2), CONCURRENCY (default "1 8 32"), INPUT_LEN (256),
# OUTPUT_LEN (128), PORT (18431; llama-server uses PORT+1), PAGODA (the pagoda binary; default:
# built from this checkout), PAGODA_ARGS and LLAMA_ARGS (extra server flags), KEEP (a directory
# for the servers' logs and the saved JSON results; default: a temporary one, removed).
# This is a benchmark, not a test: the machine's load shows in every figure, so compare the
# ratios of one run, not figures of different runs.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/SmolLM2-135M-Instruct.Q4_1.gguf}"
threads="${THREADS:-2}"
read -r -a concs <<<"${CONCURRENCY:-1 8 32}"
read -r -a nums <<<"${NUM_PROMPTS:-}"
in_len="${INPUT_LEN:-256}" out_len="${OUTPUT_LEN:-128}"
port="${PORT:-18431}" lport=$((${PORT:-18431} + 1))
read -r -a pagoda_args <<<"${PAGODA_ARGS:-}"
read -r -a llama_args <<<"${LLAMA_ARGS:-}"
bufts="${LLAMA_EXTRA_BUFTS:-auto}"
case "$bufts" in auto | on | off) ;; *) echo "bench-peers: LLAMA_EXTRA_BUFTS must be auto, on or off" >&2; exit 1 ;; esac

if [ ! -f "$model" ]; then
  echo "bench-peers: no model file $model (make model fetches the default one)" >&2
  exit 1
fi
maxc=1
for c in "${concs[@]}"; do
  [[ "$c" =~ ^[1-9][0-9]*$ ]] || { echo "bench-peers: CONCURRENCY: $c is not a positive integer" >&2; exit 1; }
  [ "$c" -gt "$maxc" ] && maxc=$c
done
slots=$((maxc > 32 ? maxc : 32))
if [ ${#nums[@]} -gt 0 ] && [ ${#nums[@]} -ne ${#concs[@]} ]; then
  echo "bench-peers: NUM_PROMPTS needs one count for each concurrency in CONCURRENCY" >&2
  exit 1
fi
for n in "${nums[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench-peers: NUM_PROMPTS: $n is not a positive integer" >&2; exit 1; }
done

bin="$("$here/scripts/build-llama-cpp.sh")"
work="${KEEP:-$(mktemp -d)}"
mkdir -p "$work"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

if [ "$bufts" = auto ]; then
  bufts=off
  if (timeout 600 "$bin/llama-bench" -m "$model" -t "$threads" -p 32 -n 0 -r 1 >"$work/probe.log" 2>&1) 2>/dev/null; then
    bufts=on
  else
    echo "bench-peers: llama.cpp's extra buffer types fail here (llama-bench crashed); llama-server runs with --no-repack" >&2
  fi
fi
[ "$bufts" = on ] || llama_args=(--no-repack "${llama_args[@]}")

pagoda="${PAGODA:-}"
if [ -z "$pagoda" ]; then
  (cd "$here" && CGO_ENABLED=0 go build -o "$work/pagoda" ./cmd/pagoda)
  pagoda="$work/pagoda"
fi

# start NAME PORT CMD...: starts a server in the background (log in $work/NAME.log) and waits
# until GET /health answers 200; fails with the log's tail if the server exits or takes over
# 10 minutes.
start() {
  local name=$1 p=$2
  shift 2
  "$@" >"$work/$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 1200); do
    if curl -sf -o /dev/null "http://127.0.0.1:$p/health"; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "bench-peers: $name exited before it was ready; its log ends:" >&2
      tail -n 20 "$work/$name.log" >&2
      server_pid=""
      exit 1
    fi
    sleep 0.5
  done
  echo "bench-peers: $name not ready after 10 minutes" >&2
  exit 1
}

stop() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# run NAME PORT C N: the benchmark of N requests against the server on PORT at concurrency C;
# the result is saved as $work/NAME-C.json.
run() {
  local name=$1 p=$2 c=$3 n=$4
  echo "bench-peers: $name, concurrency $c, $n prompts" >&2
  "$pagoda" bench serve --base-url "http://127.0.0.1:$p" --dataset-name random \
    --random-input-len "$in_len" --random-output-len "$out_len" --ignore-eos \
    --max-concurrency "$c" --num-prompts "$n" --disable-tqdm \
    --save-result --result-dir "$work" --result-filename "$name-$c.json" >"$work/$name-$c.txt" 2>&1 ||
    { echo "bench-peers: the benchmark against $name failed:" >&2; tail -n 20 "$work/$name-$c.txt" >&2; exit 1; }
}

pagoda_server() {
  start pagoda "$port" "$pagoda" serve --model "$model" --port "$port" --threads "$threads" "${pagoda_args[@]}"
}

llama_server() {
  start llama-server "$lport" "$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$lport" \
    -t "$threads" -tb "$threads" -np "$slots" -cb -c $((slots * (in_len + out_len))) "${llama_args[@]}"
}

i=0
for c in "${concs[@]}"; do
  n=$((4 * c))
  n=$((n < 8 ? 8 : n > 64 ? 64 : n))
  [ ${#nums[@]} -gt 0 ] && n=${nums[$i]}
  if [ $((i % 2)) = 0 ]; then order=(pagoda llama-server); else order=(llama-server pagoda); fi
  for s in "${order[@]}"; do
    if [ "$s" = pagoda ]; then pagoda_server; run pagoda "$port" "$c" "$n"; else llama_server; run llama-server "$lport" "$c" "$n"; fi
    stop
  done
  i=$((i + 1))
done

echo "model $model; $threads threads; random prompts of $in_len tokens, $out_len output tokens (--ignore-eos);"
echo "llama-server $("$bin/llama-server" --version 2>&1 | grep -m1 -o 'version: .*' || echo '?') -np $slots -cb, extra buffer types $bufts ${llama_args[*]}; fresh servers for every row"
python3 - "$work" "${concs[@]}" <<'PY'
import json, sys
work, concs = sys.argv[1], sys.argv[2:]
def load(name, c):
    return json.load(open(f"{work}/{name}-{c}.json"))
def ratio(a, b):
    return f"{a / b:.2f}" if b else "–"
print("| concurrency | server | requests | output tok/s | mean TTFT ms | mean TPOT ms | failed |")
print("| ---: | :--- | ---: | ---: | ---: | ---: | ---: |")
for c in concs:
    p, l = load("pagoda", c), load("llama-server", c)
    for name, r in (("pagoda", p), ("llama-server", l)):
        print(f"| {c} | {name} | {r['num_prompts']} | {r['output_throughput']:.1f} | {r['mean_ttft_ms']:.0f} | {r['mean_tpot_ms']:.1f} | {r['failed']} |")
    print(f"| {c} | pagoda / llama-server | | {ratio(p['output_throughput'], l['output_throughput'])} | "
          f"{ratio(p['mean_ttft_ms'], l['mean_ttft_ms'])} | {ratio(p['mean_tpot_ms'], l['mean_tpot_ms'])} | |")
PY
