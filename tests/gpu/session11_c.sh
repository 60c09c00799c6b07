#!/usr/bin/env bash
# Session 11's third GPU call, with the changes of session11_b.sh:
# (1) bench/sweep.py's 48-case grid: one process per case (baseline) and batched at K = 2, 4 (the default), 8,
#     cold and with spares ready, confirmation on (the default);
# (2) the 384-case grid at K = 8 with confirmation off, cold and with spares ready;
# (3) the 384-case grid at K = 16 with confirmation off, with py-spy's stacks of the bench process (and its
#     children) 1 and 4 s after the first process ends: in session11_b.sh fifteen of sixteen parses took 10 s with
#     about 2 of 16 cores busy.
# The host's CPU sampled throughout. compute-sanitizer 2025.3.1.0, watchdog 30 s.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session11_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
summary() { echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$1" --to "$(date +%s.%N)"; }
echo "== 48-case grid $(date -u +%T)"
t=$(date +%s.%N)
timeout 380 python3 bench/sweep.py --slots 2,4,8 --out "$OUT/bench" > "$OUT/sweep48.txt" 2> "$OUT/sweep48.err"
echo "rc=$?"; grep -v "^report\|^no report" "$OUT/sweep48.txt"; summary "$t"; rm -rf "$OUT/bench"
echo "== 384-case K = 8, confirmation off $(date -u +%T)"
t=$(date +%s.%N)
CUPROBE_GPU_SLOTS=8 CUPROBE_CONFIRM=0 timeout 150 python3 bench/sweep.py --skip-compare --full --slots 8 \
  --out "$OUT/bench" > "$OUT/k8-off.txt" 2> "$OUT/k8-off.err"
echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/k8-off.txt"; summary "$t"; rm -rf "$OUT/bench"
echo "== 384-case K = 16, confirmation off, stacks during the parse $(date -u +%T)"
t=$(date +%s.%N)
CUPROBE_GPU_SLOTS=16 CUPROBE_CONFIRM=0 timeout 120 python3 bench/sweep.py --skip-compare --full --slots 16 --no-warm \
  --out "$OUT/bench" > "$OUT/k16-off.txt" 2> "$OUT/k16-off.err" & bench=$!
for _ in $(seq 900); do grep -q " 1/16 " "$OUT/k16-off.err" 2>/dev/null && break; sleep 0.1; done
for wait in 1 3; do
  sleep $wait
  echo "--- stacks $(date -u +%T.%N)" >> "$OUT/k16-stacks.txt"
  timeout 20 py-spy dump --pid $bench --subprocesses >> "$OUT/k16-stacks.txt" 2>&1 \
    || timeout 20 py-spy dump --pid $bench >> "$OUT/k16-stacks.txt" 2>&1
  ps -eo pid,ppid,stat,pcpu,etimes,args --sort=-pcpu | head -40 >> "$OUT/k16-stacks.txt"
done
wait $bench; echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/k16-off.txt"; summary "$t"; rm -rf "$OUT/bench"
grep -c "Thread" "$OUT/k16-stacks.txt"
kill $sampler
echo "== done $(date -u +%T)"
