#!/usr/bin/env bash
# Session 11's fourth GPU call: the 384-case grid with confirmation off (CUPROBE_CONFIRM=0) at K = 4, 8 and 16, cold
# and with spares ready, after a slot's XML goes to child processes by records times the parses beside it (in
# session11_c.sh sixteen slots' files of about 3,970 records each fell under the 4,000-record line and took 7 s to
# parse in one process). Where adding processes stops helping without the confirmation's re-runs. CPU sampled.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session11_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for k in 4 8 16; do
  echo "== 384-case K = $k, confirmation off $(date -u +%T)"
  t=$(date +%s.%N)
  CUPROBE_GPU_SLOTS=$k CUPROBE_CONFIRM=0 timeout 150 python3 bench/sweep.py --skip-compare --full --slots $k \
    --out "$OUT/bench" > "$OUT/k$k-off.txt" 2> "$OUT/k$k-off.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/k$k-off.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
done
kill $sampler
echo "== done $(date -u +%T)"
