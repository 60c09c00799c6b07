#!/usr/bin/env bash
# Session 11's fifth GPU call: does lowering the confirmation's re-runs' CPU priority (CUPROBE_CONFIRM_NICE, default
# 10) help? The 384-case grid with confirmation on at K = 4 and K = 8, cold and with spares ready, with nice 10 and
# nice 0 alternating. CPU sampled. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session11_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for k in 4 8; do
  for nice in 10 0; do
    echo "== 384-case K = $k, confirmation on, re-runs at nice $nice $(date -u +%T)"
    t=$(date +%s.%N)
    CUPROBE_GPU_SLOTS=$k CUPROBE_CONFIRM_NICE=$nice timeout 150 python3 bench/sweep.py --skip-compare --full \
      --slots $k --out "$OUT/bench" > "$OUT/k$k-nice$nice.txt" 2> "$OUT/k$k-nice$nice.err"
    echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/k$k-nice$nice.txt"
    echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
    rm -rf "$OUT/bench"
  done
done
kill $sampler
echo "== done $(date -u +%T)"
