#!/usr/bin/env bash
# pagoda next to llama.cpp's llama-bench on each model family's shape, in one run: prefill of 512
# tokens (pp512), decode of 128 (tg128) and pagoda's batched decode of 32 sequences, on the same
# GGUF files and thread count, alternating the two programs rep by rep, and the ratios.
#
#   scripts/bench-families.sh [FAMILY...]     # default: gemma3-270m qwen3-0.6b llama-3.2-1b phi-4-mini
#
# gemma3-270m is the real Gemma 3 270M (make gemma3); the others are synthesized at their real
# shapes with `pagoda model synth --shape NAME --type $TYPE` (default Q4_0) into $PAGODA_CACHE/synth
# (default ~/.cache/pagoda/synth), once. llama-bench comes from scripts/build-llama-cpp.sh (the pinned
# llama.cpp of the reference data). Environment: THREADS (default nproc), REPS (3), TYPE (Q4_0).
# Prints a markdown table; pagoda's rows also go to $out/NAME.pagoda.json, llama-bench's to
# $out/NAME.llama.json ($out is printed).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${PAGODA_CACHE:-$HOME/.cache/pagoda}"
models="${PAGODA_MODELS:-$cache/models}"
threads="${THREADS:-$(nproc)}" reps="${REPS:-3}" type="${TYPE:-Q4_0}"
families=("$@")
[ ${#families[@]} -eq 0 ] && families=(gemma3-270m qwen3-0.6b llama-3.2-1b phi-4-mini)

bin="$(bash "$here/scripts/build-llama-cpp.sh")"
out="$(mktemp -d)"
(cd "$here" && go build -o "$out/pagoda" ./cmd/pagoda)
pagoda="$out/pagoda"
mkdir -p "$cache/synth"

file_of() {
  case "$1" in
    gemma3-270m) (cd "$here" && make -s gemma3 >&2); echo "$models/gemma-3-270m-q4_k_m.gguf" ;;
    *)
      local f="$cache/synth/$1.$type.gguf"
      [ -s "$f" ] || "$pagoda" model synth --shape "$1" --type "$type" --out "$f" >&2
      echo "$f" ;;
  esac
}

echo "| model | file | pagoda pp512 | llama.cpp pp512 | ratio | pagoda tg128 | llama.cpp tg128 | ratio | pagoda decode 32 (tok/s) |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for fam in "${families[@]}"; do
  f="$(file_of "$fam")"
  for r in $(seq "$reps"); do
    "$pagoda" bench latency --model "$f" --threads "$threads" --batch 32 --reps 1 \
      --output-json "$out/$fam.pagoda.$r.json" >/dev/null 2>&1
    "$bin/llama-bench" -m "$f" -t "$threads" -p 512 -n 128 -r 1 -o json >"$out/$fam.llama.$r.json" 2>/dev/null
  done
  python3 - "$out" "$fam" "$(basename "$f")" "$reps" <<'EOF'
import json, statistics, sys
out, fam, name, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
p = {"pp512": [], "tg128": [], "decode 32": []}
l = {"pp512": [], "tg128": []}
for r in range(1, reps + 1):
    for row in json.load(open(f"{out}/{fam}.pagoda.{r}.json"))["results"]:
        t = row["test"]
        key = "decode 32" if t.startswith("decode 32") else t
        if key in p:
            p[key].append(row["tokens_per_second"])
    for row in json.load(open(f"{out}/{fam}.llama.{r}.json")):
        key = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
        if key in l:
            l[key].append(row["avg_ts"])
m = {k: statistics.median(v) for k, v in p.items() if v}
n = {k: statistics.median(v) for k, v in l.items() if v}
print(f"| {fam} | {name} | {m['pp512']:.1f} | {n['pp512']:.1f} | {m['pp512']/n['pp512']:.2f}× "
      f"| {m['tg128']:.1f} | {n['tg128']:.1f} | {m['tg128']/n['tg128']:.2f}× | {m['decode 32']:.1f} |")
EOF
done
echo "(medians of $reps alternated reps, $threads threads; results in $out)"
