#!/usr/bin/env bash
# pagoda beside its peers on the same GGUF files, in two modes:
#
#   scripts/bench-peers.sh [MODEL.gguf]                 # serving: pagoda serve vs llama-server
#   scripts/bench-peers.sh latency [MODEL.gguf...]      # llama-bench's tests: pagoda vs llama.cpp
#                                                       # and ik_llama.cpp (where it is built)
#
# latency: prefill of PP tokens (pp512) and decode of TG tokens (tg128), each also after DEPTHS
# tokens of context are in the KV cache (llama-bench -d), measured by `pagoda bench latency
# --depth`, llama.cpp's llama-bench (-d, -fa FA) and, when scripts/build-ik-llama-cpp.sh finds or
# builds it, ik_llama.cpp's llama-bench (-rtr 1, run-time repacking; -fa FA; it has no -d: its
# -gp D,TG gives tg at depth D, and no pp at a depth is measured there). The programs run one
# repetition each, in turn (pagoda, llama.cpp, ik_llama.cpp in round 1; llama.cpp, ik_llama.cpp,
# pagoda in round 2; …: the order rotates), REPS rounds, so that a drift of the machine's speed is
# shared; the table gives, for each test, every program's median
# and range (min–max) of tokens/s over the rounds, and the median and range of the rounds' ratios
# of pagoda to each peer (paired within a round, so that a drift between rounds cancels).
# Environment: THREADS (2), REPS (3), PP (512), TG (128), DEPTHS (comma list, "0"; e.g.
# "0,4096,16384": a depth plus PP or TG must fit the model's context, which pagoda checks), FA
# (llama.cpp's and ik_llama.cpp's flash attention: 1, 0 or "0,1"; default 1), IK_LLAMA (auto, or
# off to leave ik_llama.cpp out), LLAMA_ARGS / IK_ARGS / PAGODA_ARGS (extra flags), PAGODA, KEEP
# (keeps the JSON of every run), LLAMA_EXTRA_BUFTS (as below; off runs llama-bench --repack 0),
# BATCH (pagoda's batched decode tests, e.g. "1,32": their rows, the ratio of each to the decode of
# one sequence and to tg, pagoda's load time and memory are added) and BATCH_STEPS (their steps, 1).
# pagoda runs its default arithmetic and attention. See docs/benchmarks.md for measuring on a
# shared machine (autogroups).
#
# serving: serves one GGUF file with pagoda and with llama.cpp's llama-server, one after the
# other, under the same `pagoda bench serve` workload, and prints both and the ratios
# pagoda / llama-server.
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

# latency_peers MODEL...: the `latency` mode (see the top of this file).
latency_peers() {
  local models=("$@")
  [ ${#models[@]} -eq 0 ] && models=("${PAGODA_MODELS:-$HOME/.cache/pagoda/models}/SmolLM2-135M-Instruct.Q4_1.gguf")
  local threads="${THREADS:-2}" reps="${REPS:-3}" pp="${PP:-512}" tg="${TG:-128}" depths="${DEPTHS:-0}"
  local fa="${FA:-1}" ik="${IK_LLAMA:-auto}" batch="${BATCH:-1}" batch_steps="${BATCH_STEPS:-1}"
  [[ "$batch" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "bench-peers: BATCH must be comma-separated batch sizes, e.g. 1,32, got $batch" >&2; exit 1; }
  [[ "$batch_steps" =~ ^[1-9][0-9]*$ ]] || { echo "bench-peers: BATCH_STEPS must be a positive integer" >&2; exit 1; }
  local llama_args ik_args pagoda_args
  read -r -a llama_args <<<"${LLAMA_ARGS:-}"
  read -r -a ik_args <<<"${IK_ARGS:-}"
  read -r -a pagoda_args <<<"${PAGODA_ARGS:-}"
  [[ "$depths" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-peers: DEPTHS must be comma-separated depths, e.g. 0,4096, got $depths" >&2; exit 1; }
  [[ "$fa" =~ ^[01](,[01])?$ ]] || { echo "bench-peers: FA must be 0, 1 or 0,1, got $fa" >&2; exit 1; }
  for v in "$reps" "$pp" "$tg" "$threads"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench-peers: REPS, PP, TG and THREADS must be positive integers" >&2; exit 1; }
  done
  case "$ik" in auto | off) ;; *) echo "bench-peers: IK_LLAMA must be auto or off" >&2; exit 1 ;; esac
  for m in "${models[@]}"; do
    [ -f "$m" ] || { echo "bench-peers: no model file $m (make model fetches the default one)" >&2; exit 1; }
  done

  local bin ikbin="" pagoda
  bin="$("$here/scripts/build-llama-cpp.sh")"
  work="${KEEP:-$(mktemp -d)}"
  mkdir -p "$work"
  [ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
  if [ "$ik" = auto ]; then
    if ikbin="$("$here/scripts/build-ik-llama-cpp.sh" 2>"$work/ik-build.log")"; then
      :
    else
      ikbin=""
      echo "bench-peers: leaving ik_llama.cpp out: scripts/build-ik-llama-cpp.sh failed:" >&2
      tail -n 5 "$work/ik-build.log" | sed 's/^/  /' >&2
    fi
  else
    echo "bench-peers: leaving ik_llama.cpp out (IK_LLAMA=off)" >&2
  fi
  pagoda="${PAGODA:-}"
  if [ -z "$pagoda" ]; then
    (cd "$here" && CGO_ENABLED=0 go build -o "$work/pagoda" ./cmd/pagoda)
    pagoda="$work/pagoda"
  fi

  # llama.cpp's repacking (extra buffer types) crashes where the kernel grants no AMX tile state;
  # as in the serve mode, a short llama-bench run decides (LLAMA_EXTRA_BUFTS=on|off overrides).
  local bufts="${LLAMA_EXTRA_BUFTS:-auto}"
  if [ "$bufts" = auto ]; then
    bufts=off
    if (timeout 600 "$bin/llama-bench" -m "${models[0]}" -t "$threads" -p 32 -n 0 -r 1 >"$work/probe.log" 2>&1) 2>/dev/null; then
      bufts=on
    else
      echo "bench-peers: llama.cpp's extra buffer types fail here (llama-bench crashed); llama-bench runs with --repack 0" >&2
    fi
  fi
  [ "$bufts" = on ] || llama_args=(--repack 0 "${llama_args[@]}")

  # ik_llama.cpp's llama-bench has no -d: its -gp D,TG is tg at depth D (the D-token prompt
  # untimed), and it has no prefill at a depth.
  local gp=() ikpp=0 iktg=0
  for d in ${depths//,/ }; do
    if [ "$d" -gt 0 ]; then gp+=(-gp "$d,$tg"); else ikpp=$pp iktg=$tg; fi
  done

  # run_one PROGRAM I R M: one repetition of PROGRAM (pagoda, llama or ik) on model M, the I-th
  # model, in round R.
  run_one() {
    local p="$1" i="$2" r="$3" m="$4"
    case "$p" in
    pagoda)
      "$pagoda" bench latency --model "$m" --threads "$threads" --pp "$pp" --tg "$tg" --depth "$depths" \
        --reps 1 --batch "$batch" --batch-steps "$batch_steps" --output-json "$work/$i.$r.pagoda.json" "${pagoda_args[@]}" \
        >"$work/$i.$r.pagoda.txt" 2>&1 || { echo "bench-peers: pagoda failed:" >&2; tail -n 20 "$work/$i.$r.pagoda.txt" >&2; exit 1; } ;;
    llama)
      "$bin/llama-bench" -m "$m" -t "$threads" -p "$pp" -n "$tg" -d "$depths" -fa "$fa" -r 1 -o json \
        "${llama_args[@]}" >"$work/$i.$r.llama.json" 2>"$work/$i.$r.llama.err" ||
        { echo "bench-peers: llama-bench failed:" >&2; tail -n 20 "$work/$i.$r.llama.err" >&2; exit 1; } ;;
    ik)
      "$ikbin/llama-bench" -m "$m" -t "$threads" -p "$ikpp" -n "$iktg" "${gp[@]}" -fa "$fa" -rtr 1 -r 1 -o json \
        "${ik_args[@]}" >"$work/$i.$r.ik.json" 2>"$work/$i.$r.ik.err" ||
        { echo "bench-peers: ik_llama.cpp's llama-bench failed:" >&2; tail -n 20 "$work/$i.$r.ik.err" >&2; exit 1; } ;;
    esac
  }

  # The order of the programs rotates from round to round (pagoda first in round 1, llama.cpp in
  # round 2, …), so that none always runs first after another model's load or last before it.
  local progs=(pagoda llama) order
  [ -n "$ikbin" ] && progs+=(ik)
  local i r m n k p
  for r in $(seq "$reps"); do
    order=()
    for k in $(seq 0 $((${#progs[@]} - 1))); do order+=("${progs[$(((k + r - 1) % ${#progs[@]}))]}"); done
    i=0
    for m in "${models[@]}"; do
      i=$((i + 1))
      echo "bench-peers: round $r of $reps, $(basename "$m"): ${order[*]}" >&2
      for p in "${order[@]}"; do run_one "$p" "$i" "$r" "$m"; done
    done
  done

  echo "$threads threads; $reps rounds, each running pagoda, llama.cpp${ikbin:+ and ik_llama.cpp} once in turn on each model (one repetition each; the order rotates between rounds);"
  local ver
  ver="$("$bin/llama-bench" --version 2>&1 | grep -m1 -o 'version: .*' || true)"
  echo "median (min–max) tokens/s; ratios: median (min–max) of the rounds' ratios. llama.cpp: llama-bench ${ver:-version ?}, -fa $fa, extra buffer types $bufts${llama_args[*]:+ ${llama_args[*]}}."
  [ -n "$ikbin" ] && echo "ik_llama.cpp: llama-bench of $(cat "$ikbin/../../ik_llama.cpp-src/PAGODA_COMMIT" 2>/dev/null | cut -c1-9 || echo '?'), -rtr 1 -fa $fa${ik_args[*]:+ ${ik_args[*]}}; its tg at a depth is its -gp D,$tg, and it has no pp at a depth (–)."
  i=0
  for m in "${models[@]}"; do
    i=$((i + 1))
    echo
    echo "model $m"
    echo
    python3 - "$work" "$i" "$reps" "$([ -n "$ikbin" ] && echo 1 || echo 0)" "${BATCH:+1}" <<'PY'
import json, re, statistics, sys
work, i, reps, has_ik = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
batched = sys.argv[5] == "1"  # BATCH given: pagoda's batched decode rows too

def fa_name(v):
    return "1" if str(v).lower() in ("1", "true", "on", "enabled") else "0"

def llama_key(row):
    test = f"pp{row['n_prompt']}" if row.get("n_prompt") else f"tg{row['n_gen']}"
    d = row.get("n_depth", 0)
    return (f"{test} @ d{d}" if d else test), fa_name(row.get("flash_attn", 0))

def ik_key(row):
    m = re.fullmatch(r"tg(\d+)@pp(\d+)", row["test"])
    test = f"tg{m.group(1)} @ d{m.group(2)}" if m else row["test"]
    return test, fa_name(row.get("flash_attn", 0))

cols = {"pagoda": {}}
tests = []
frac, ceiling, gbs, load, rss, anon = {}, {}, {}, [], [], []
for r in range(1, reps + 1):
    rows = json.load(open(f"{work}/{i}.{r}.pagoda.json"))["results"]
    if rows:
        load.append(rows[0].get("load_seconds", 0))
        rss.append(rows[0].get("rss_mib_after_load", 0))
        anon.append(rows[0].get("anon_mib_after_load", 0))
    for row in rows:
        if row["test"].startswith("decode") and not batched:
            continue
        cols["pagoda"].setdefault(row["test"], []).append(row["tokens_per_second"])
        frac.setdefault(row["test"], []).append(100 * row["fraction"])
        ceiling[row["test"]] = row["ceiling"]
        if row.get("read_gbs"):
            gbs.setdefault(row["test"], []).append(row["read_gbs"])
        if row["test"] not in tests:
            tests.append(row["test"])
    for name, key, on in (("llama.cpp", llama_key, True), ("ik_llama.cpp", ik_key, has_ik)):
        if not on:
            continue
        for row in json.load(open(f"{work}/{i}.{r}.{'llama' if name == 'llama.cpp' else 'ik'}.json")):
            test, fa = key(row)
            cols.setdefault(f"{name} -fa {fa}", {}).setdefault(test, []).append(row["avg_ts"])
peers = [c for c in cols if c != "pagoda"]

def cell(xs):
    if not xs:
        return "–"
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}–{max(xs):.1f})"

head = ["test", "pagoda"] + peers + [f"pagoda ÷ {p}" for p in peers] + ["pagoda: of its ceiling (median)"]
print("| " + " | ".join(head) + " |")
print("| :--- | " + " | ".join(["---:"] * (len(head) - 2)) + " | :--- |")
for t in tests:
    p = cols["pagoda"].get(t, [])
    row = [t, cell(p)] + [cell(cols[c].get(t, [])) for c in peers]
    for c in peers:
        q = cols[c].get(t, [])
        # Paired: each round's ratio (the programs ran minutes apart at most), then their median and
        # range, which a drift of the machine's bandwidth between rounds moves far less than a ratio
        # of medians.
        rs = [a / b for a, b in zip(p, q)]
        row.append(f"**{statistics.median(rs):.2f}×** ({min(rs):.2f}–{max(rs):.2f})" if rs else "–")
    at = f" ({statistics.median(gbs[t]):.1f} GB/s around it)" if gbs.get(t) else ""
    row.append(f"{statistics.median(frac[t]):.0f}% of {ceiling[t]}{at}" if frac.get(t) else "–")
    print("| " + " | ".join(row) + " |")
if batched:
    one = [t for t in tests if t.startswith("decode 1 seqs")]
    for t in tests:
        if one and t.startswith("decode ") and t not in one:
            b = statistics.median(cols["pagoda"][t]) / statistics.median(cols["pagoda"][one[0]])
            print(f"\npagoda {t}: {b:.2f}× its decode of 1 sequence", end="")
            tg = [u for u in tests if u.startswith("tg") and "@" not in u]
            if tg:
                print(f", {statistics.median(cols['pagoda'][t]) / statistics.median(cols['pagoda'][tg[0]]):.2f}× its {tg[0]}", end="")
    print()
if load:
    print(f"\npagoda: load {statistics.median(load):.1f} s ({min(load):.1f}–{max(load):.1f}), "
          f"resident memory after the load {statistics.median(rss):.0f} MiB, of it anonymous {statistics.median(anon):.0f} MiB "
          "(the rest: the mapped file's pages)")
PY
  done
  [ -z "${KEEP:-}" ] || echo "(the runs' JSON and logs are in $work)"
}

if [ "${1:-}" = latency ]; then
  shift
  latency_peers "$@"
  exit 0
fi
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
