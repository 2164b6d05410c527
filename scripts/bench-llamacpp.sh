#!/usr/bin/env bash
# Compares pagoda with llama.cpp (through llama-cpp-python) on one GGUF file, in the same run:
# prefill (pp) and single-sequence decode (tg) tokens/s on the same thread counts, and the
# ratios pagoda / llama.cpp.
#
#   scripts/bench-llamacpp.sh [MODEL.gguf] [THREADS...]
#
# llama-cpp-python is installed once (built from the PyPI sdist, which compiles llama.cpp for
# this CPU) into a throwaway virtual environment cached in $PAGODA_CACHE/llamacpp-venv
# (default ~/.cache/pagoda). Environment: PP (default 512), TG (128), REPS (3), PAGODA (the
# pagoda binary; default: built into a temporary directory from this checkout).
# llama.cpp runs with its default extra buffer types (weight repacking into interleaved rows,
# which it does for Q4_0, IQ4_NL and Q4_K on AVX2/AVX-512 machines) when they work here, checked
# in a child process first because on some machines they crash; LLAMA_EXTRA_BUFTS=on|off|auto
# (default auto) overrides. pagoda runs the matching arithmetic (repacked Q4_0, or --no-repack).
# The table says which configuration ran.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${PAGODA_CACHE:-$HOME/.cache/pagoda}"
venv="$cache/llamacpp-venv"
version=0.3.36
model="${1:-${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/SmolLM2-135M-Instruct.Q4_1.gguf}"
shift || true
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1 "$(nproc)")
pp="${PP:-512}" tg="${TG:-128}" reps="${REPS:-3}"

if ! "$venv/bin/python" -c "import llama_cpp" 2>/dev/null; then
  echo "installing llama-cpp-python $version into $venv (compiles llama.cpp; takes a few minutes)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "llama-cpp-python==$version"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pagoda="${PAGODA:-}"
if [ -z "$pagoda" ]; then
  (cd "$here" && go build -o "$tmp/pagoda" ./cmd/pagoda)
  pagoda="$tmp/pagoda"
fi

# llama.cpp's extra buffer types (weight repacking, AMX tiles) are its default and its fastest
# CPU path, but they crash on machines whose kernel does not grant AMX tile state to the
# process (as scripts/make_reference.py notes). In auto mode a child process tries them first.
# pagoda runs the matching arithmetic: repacked Q4_0 with them, --no-repack without.
mode="${LLAMA_EXTRA_BUFTS:-auto}"
if [ "$mode" = auto ]; then
  mode=off
  if timeout 600 "$venv/bin/python" -c '
import llama_cpp, sys
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=32, verbose=False)
llm.eval(list(range(1, 33)))' "$model" >/dev/null 2>&1; then
    mode=on
  fi
fi
norepack=()
[ "$mode" = on ] || norepack=(--no-repack)

csv=$(IFS=,; echo "${threads[*]}")
"$pagoda" bench latency --model "$model" --threads "$csv" --pp "$pp" --tg "$tg" --reps "$reps" \
  --batch 1 --batch-steps 1 --output-json "$tmp/pagoda.json" "${norepack[@]}" >&2

LLAMA_EXTRA_BUFTS="$mode" PYTHONPATH="$here/scripts" "$venv/bin/python" - "$model" "$pp" "$tg" "$reps" "$tmp/pagoda.json" "${threads[@]}" <<'PY'
import json, os, random, statistics, subprocess, sys, time
import llama_cpp
from make_reference import use_extra_bufts

model, pp, tg, reps, pj = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
threads = [int(t) for t in sys.argv[6:]]

# The shell above chose llama.cpp's extra buffer types (on or off) and pagoda's matching mode.
mode = os.environ["LLAMA_EXTRA_BUFTS"]
extra = mode == "on"
use_extra_bufts(extra)
pagoda = {(r["threads"], r["test"]): r["tokens_per_second"] for r in json.load(open(pj))["results"]}

def measure(n_threads):
    llm = llama_cpp.Llama(model_path=model, n_ctx=max(pp, tg) + 16, n_batch=pp, n_ubatch=pp,
                          n_threads=n_threads, n_threads_batch=n_threads, verbose=False)
    vocab = llm.n_vocab()
    rnd = random.Random(1)
    ppt, tgt = [], []
    for _ in range(reps):
        toks = [rnd.randrange(vocab) for _ in range(pp)]
        llm.reset()
        t0 = time.perf_counter(); llm.eval(toks); ppt.append(pp / (time.perf_counter() - t0))
        llm.reset()
        t0 = time.perf_counter()
        for _ in range(tg):
            llm.eval([rnd.randrange(vocab)])
        tgt.append(tg / (time.perf_counter() - t0))
    return ppt, tgt

print(f"model {model}; llama.cpp extra buffer types (repacking): {mode}; pagoda {'repacked' if extra else '--no-repack'}")
print("| threads | test | llama.cpp t/s | pagoda t/s | pagoda / llama.cpp |")
print("| ---: | :--- | ---: | ---: | ---: |")
for t in threads:
    ppt, tgt = measure(t)
    for test, xs in ((f"pp{pp}", ppt), (f"tg{tg}", tgt)):
        m = statistics.mean(xs)
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        p = pagoda.get((t, test), float("nan"))
        print(f"| {t} | {test} | {m:.2f} ± {sd:.2f} | {p:.2f} | {p / m:.2f} |")
PY
