#!/usr/bin/env bash
# Measures tensor parallelism across a shaped network link (issue 14, part 4): two ranks in two
# network namespaces joined by a veth pair, one core each, the link shaped with tc's token bucket
# filter (tbf) to each rate in $RATES; rank 0 serves HTTP, reached from the root namespace over
# its own unshaped veth pair. Configurations, alternated within each repetition (the order rotates
# from one repetition to the next):
#   tp1      one process, 2 threads (taskset on both cores), in namespace 0; no link involved
#   tp2      mpirun -np 2, one rank per namespace and core, --threads 1
#   tp2-dbo  the same with --enable-dbo (when the binary has the flag)
# Workloads (pagoda bench serve, random dataset, vLLM's definitions):
#   prefill  --random-input-len 1024 --random-output-len 1, concurrency 8
#   decode   --random-input-len 256 --random-output-len 128, concurrency 32, --ignore-eos
# It prints one markdown table per workload and rate: mean TTFT, request throughput and output
# tokens/s per configuration (mean ± sample standard deviation over the repetitions), the paired
# ratios against tp2 (mean, min–max), and the mean per-step breakdown (compute, communication,
# waiting) rank 0's engine exports in /metrics.
#
#   sudo scripts/tp-netns.sh
#
# Root is needed (ip netns, tc). Environment (defaults in brackets):
#   REPS [5]                 paired repetitions
#   PREFILL_PROMPTS [8]      requests of the prefill-heavy workload
#   DECODE_PROMPTS [32]      requests of the decode-heavy workload
#   WORKLOADS ["prefill decode"]
#   RATES ["1gbit 10gbit"]   tbf rates (tc's syntax), one table each
#   CONFIGS ["tp1 tp2 tp2-dbo"] (tp2-dbo is dropped when serve has no --enable-dbo)
#   MODEL [~/.cache/pagoda/models/tinyllama-1.1b-synth.Q4_0.gguf] (synthesized when missing)
#   SYNTH_DIMS [""]          instead of MODEL: a synthetic Q4_0 model of `pagoda model synth --dims`
#                            (dim,hidden,layers,heads,kvheads,vocab; TinyLlama's vocabulary), e.g.
#                            2048,5632,4,32,4,32000: TinyLlama's layers, 4 of its 22 (every layer
#                            has the same compute and all-reduce bytes: the per-layer ratio holds)
#   OUT [a new temporary directory]  raw results (bench JSON, /metrics scrapes, server logs)
#   SERVE_ARGS [""]          extra flags for every serve
# Every run uses --enforce-eager (tensor parallelism runs eager; tp1 too, for a like-for-like
# step), prefix caching off (the same prompts are sent to every configuration), max-num-seqs 32,
# a 1 GiB KV cache. The link has no modelled latency (this kernel has no netem): only its rate is
# shaped, both directions. With the defaults a run takes hours on a shared 2-core machine.
#
# How the ranks get into the namespaces: mpirun (in the root namespace) treats each namespace as a
# remote host, named by the address of its control link, and starts the host's orted through a
# launcher agent (plm_rsh_agent) that runs `ip netns exec NS taskset -c CORE sh -c CMD` instead of
# ssh. A rank then talks to its own orted over loopback in its namespace (PMIx), orted to mpirun
# over the control link (oob_tcp_if_include), and the two ranks to each other only over the shaped
# veth pair (btl self,tcp with btl_tcp_if_include: no shared memory between them).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
reps="${REPS:-5}"
prefill_prompts="${PREFILL_PROMPTS:-8}"
decode_prompts="${DECODE_PROMPTS:-32}"
workloads="${WORKLOADS:-prefill decode}"
rates="${RATES:-1gbit 10gbit}"
configs="${CONFIGS:-tp1 tp2 tp2-dbo}"
models="${PAGODA_MODELS:-$HOME/.cache/pagoda/models}"
synth_dims="${SYNTH_DIMS:-}"
model="${MODEL:-$models/tinyllama-1.1b-synth.Q4_0.gguf}"
[ -n "$synth_dims" ] && model="$models/synth-${synth_dims//,/-}.Q4_0.gguf"
serve_args="${SERVE_ARGS:-}"
port=8000

[ "$(id -u)" = 0 ] || { echo "tp-netns.sh: needs root (ip netns, tc)" >&2; exit 1; }
for c in ip tc mpirun taskset curl python3; do
  command -v "$c" >/dev/null || { echo "tp-netns.sh: $c is missing" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "tp-netns.sh: needs 2 cores" >&2; exit 1; }

out="${OUT:-$(mktemp -d /tmp/tp-netns.XXXXXX)}"
mkdir -p "$out"
echo "raw results in $out" >&2

# Namespaces and links. The shaped link carries only MPI's traffic; the control links carry
# mpirun's (out-of-band) traffic and HTTP. Addresses come from 198.18.0.0/15, the range set
# aside for benchmarking networks (RFC 2544), and live only inside these namespaces.
ns=(pgtp0 pgtp1)
data_net=198.19.0     # shaped: pgtpd0 (ns 0) .1 <-> pgtpd1 (ns 1) .2
ctl_net=(198.18.1 198.18.2)  # control: pgtpcN (root) .1 <-> pgtphN (ns N) .2
ctl_host=("${ctl_net[0]}.2" "${ctl_net[1]}.2")
pids=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  ip link del pgtpc0 2>/dev/null || true
  ip link del pgtpc1 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

setup_net() {
  for n in "${ns[@]}"; do
    if ip netns list | grep -qw "$n"; then
      echo "tp-netns.sh: namespace $n exists (another run, or a stale one: ip netns del $n)" >&2
      ns=(); exit 1
    fi
  done
  ip netns add "${ns[0]}"
  ip netns add "${ns[1]}"
  ip link add pgtpd0 type veth peer name pgtpd1
  for i in 0 1; do
    ip link set "pgtpd$i" netns "${ns[$i]}"
    ip -n "${ns[$i]}" addr add "$data_net.$((i + 1))/24" dev "pgtpd$i"
    ip -n "${ns[$i]}" link set "pgtpd$i" up
    ip -n "${ns[$i]}" link set lo up
    ip link add "pgtpc$i" type veth peer name "pgtph$i"
    ip link set "pgtph$i" netns "${ns[$i]}"
    ip addr add "${ctl_net[$i]}.1/24" dev "pgtpc$i"
    ip link set "pgtpc$i" up
    ip -n "${ns[$i]}" addr add "${ctl_host[$i]}/24" dev "pgtph$i"
    ip -n "${ns[$i]}" link set "pgtph$i" up
  done
}

# shape RATE: tbf on both ends of the data link (each shapes its egress). The bucket holds 2 ms
# of traffic at the rate (at least 64 KiB), so the timer's granularity does not cap the rate.
shape() {
  local bits burst
  bits=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1].lower()); \
print(int(float(m[1]) * {'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]]))" "$1")
  burst=$((bits / 8 / 500))
  [ "$burst" -ge 65536 ] || burst=65536
  for i in 0 1; do
    tc -n "${ns[$i]}" qdisc replace dev "pgtpd$i" root tbf rate "$1" burst "$burst" latency 50ms
  done
}

# The launcher agent: mpirun calls it as `agent HOST CMD...` (as it would call ssh).
agent="$out/netns-agent.sh"
write_agent() {
  cat >"$agent" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in
${ctl_host[0]}) exec ip netns exec ${ns[0]} taskset -c 0 sh -c "\$*" ;;
${ctl_host[1]}) exec ip netns exec ${ns[1]} taskset -c 1 sh -c "\$*" ;;
esac
echo "netns-agent: unknown host \$host" >&2
exit 1
EOF
  chmod +x "$agent"
}

build() {
  (cd "$here" && make -s build build-mpi)
  if [ ! -s "$model" ]; then
    mkdir -p "$(dirname "$model")"
    if [ -n "$synth_dims" ]; then
      "$here/bin/pagoda" model synth --dims "$synth_dims" --vocab "$models/ggml-vocab/ggml-vocab-llama-spm.gguf" --out "$model"
    else
      "$here/bin/pagoda" model synth --shape tinyllama-1.1b --out "$model"
    fi
  fi
}

common_serve=(--host 0.0.0.0 --port "$port" --enforce-eager --enable-prefix-caching=false
  --max-num-seqs 32 --kv-cache-memory 1GiB --disable-log-stats)

# start CONFIG LOG: starts the configuration's server in the background (pid in srv_pid).
start() {
  local cfg=$1 log=$2
  case "$cfg" in
  tp1)
    ip netns exec "${ns[0]}" taskset -c 0,1 "$here/bin/pagoda" serve "$model" --threads 2 \
      "${common_serve[@]}" $serve_args >"$log" 2>&1 &
    ;;
  tp2 | tp2-dbo)
    local dbo=()
    [ "$cfg" = tp2-dbo ] && dbo=(--enable-dbo)
    mpirun --allow-run-as-root --host "${ctl_host[0]},${ctl_host[1]}" -np 2 --bind-to none \
      --mca plm_rsh_agent "$agent" --mca routed direct --mca rtc ^hwloc \
      --mca oob_tcp_if_include 198.18.0.0/16 \
      --mca btl self,tcp --mca btl_tcp_if_include "$data_net.0/24" \
      "$here/bin/pagoda-mpi" serve "$model" --tensor-parallel-size 2 --threads 1 \
      "${common_serve[@]}" "${dbo[@]}" $serve_args >"$log" 2>&1 &
    ;;
  esac
  srv_pid=$!
  pids+=("$srv_pid")
  local i
  for i in $(seq 600); do
    curl -sf "http://${ctl_host[0]}:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$srv_pid" 2>/dev/null || { echo "server $cfg exited; its log:" >&2; tail -20 "$log" >&2; exit 1; }
    sleep 1
  done
  echo "server $cfg did not come up in 10 minutes; its log: $log" >&2
  exit 1
}

stop() {
  kill -TERM "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" 2>/dev/null || true
  pids=("${pids[@]/$srv_pid/}")
}

# bench WORKLOAD SEED NAME: one benchmark run with /metrics scraped before and after.
bench() {
  local w=$1 seed=$2 name=$3 url="http://${ctl_host[0]}:$port"
  local args=()
  case "$w" in
  prefill) args=(--random-input-len 1024 --random-output-len 1 --max-concurrency 8 --num-prompts "$prefill_prompts") ;;
  decode) args=(--random-input-len 256 --random-output-len 128 --max-concurrency 32 --num-prompts "$decode_prompts" --ignore-eos) ;;
  esac
  curl -sf "$url/metrics" >"$out/$name.before.prom"
  "$here/bin/pagoda" bench serve --base-url "$url" --dataset-name random --seed "$seed" "${args[@]}" \
    --disable-tqdm --save-result --result-dir "$out" --result-filename "$name.json" >"$out/$name.txt" 2>&1
  curl -sf "$url/metrics" >"$out/$name.after.prom"
  echo "$name: $(grep -E 'Mean TTFT|Request throughput' "$out/$name.txt" | tr -s ' ' | paste -sd ' ')" >&2
}

# rotate N WORDS...: the words rotated left by N.
rotate() {
  local n=$1; shift
  local a=("$@") k=${#a[@]}
  local i
  for ((i = 0; i < k; i++)); do printf '%s ' "${a[$(((i + n) % k))]}"; done
}

main() {
  build
  if ! "$here/bin/pagoda-mpi" serve --help 2>&1 | grep -q -- '-enable-dbo'; then
    configs="${configs//tp2-dbo/}"
    echo "serve has no --enable-dbo: measuring $configs" >&2
  fi
  setup_net
  write_agent
  local r cfg rate w
  for ((r = 0; r < reps; r++)); do
    for cfg in $(rotate "$r" $configs); do
      start "$cfg" "$out/serve-r$r-$cfg.log"
      for rate in $rates; do
        [ "$cfg" = tp1 ] && [ "$rate" != "${rates%% *}" ] && continue # no link: once per repetition
        shape "$rate"
        for w in $workloads; do
          bench "$w" "$((1000 + r))" "r$r-$cfg-$rate-$w"
        done
      done
      stop
    done
  done
  python3 "$here/scripts/tp-netns-report.py" "$out" "$reps" "$configs" "$rates" "$workloads"
}

main
