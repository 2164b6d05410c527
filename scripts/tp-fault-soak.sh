#!/usr/bin/env bash
# Soak a 2-rank tensor-parallel server (stories260K, make build-mpi) and make
# rank 1 fail mid-run: scripts/tp-fault-soak.sh KILL|STOP [PORT]. Prints the
# health status after the fault, mpirun's exit status and the soak's summary
# (the soak "fails" at its end since the job has ended, as it must).
set -u
SIG=${1:?KILL or STOP}; PORT=${2:-18610}
cd "$(dirname "$0")/.."
[ -x bin/pagoda-mpi ] || make -s build-mpi
[ -x bin/pagoda ] || make -s build
MODEL=testdata/models/stories260K/stories260K.gguf
LOG=$(mktemp -d)
mpirun -np 2 --oversubscribe --allow-run-as-root bin/pagoda-mpi serve $MODEL --tensor-parallel-size 2 \
	--port "$PORT" --threads 1 --tp-step-timeout 5 --enforce-eager --max-model-len 256 --kv-cache-dtype f32 \
	>"$LOG/server.log" 2>&1 &
MPI=$!
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
rank0=$(ss -ltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
rank1=$(for p in $(pgrep -f "^bin/pagoda-mpi serve $MODEL"); do [ "$p" != "$rank0" ] && echo "$p"; done | head -1)
bin/pagoda bench soak --base-url "http://127.0.0.1:$PORT" --num-requests 3000 --max-concurrency 16 \
	--max-tokens 32 --seed 5 --endpoints completions >"$LOG/soak.txt" 2>&1 &
SOAK=$!
sleep 5
kill -"$SIG" "$rank1"
echo "SIG$SIG to rank 1 (pid $rank1)"
sleep 2
echo "/health 2 s later: $(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:$PORT/health")"
wait $SOAK
wait $MPI; echo "mpirun exit status $?"
kill -9 "$rank1" 2>/dev/null
sed -n '/Soak Result/,$p' "$LOG/soak.txt"
rm -rf "$LOG"
