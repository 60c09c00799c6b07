#!/usr/bin/env bash
# Session 9, fourth GPU call: bench/sweep.py --skip-compare --full: the 384-case grid at K = 1, 2, 4, 8, cold and with
# spares ready (compute-sanitizer 2025.3.1.0, watchdog 30 s).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session9_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== bench/sweep.py 384-case $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30 timeout 420 \
  python3 bench/sweep.py --skip-compare --full --slots 1,2,4,8 --out "$OUT/bench" > "$OUT/sweep384.txt" 2> "$OUT/sweep384.err"
echo "rc=$?"; cat "$OUT/sweep384.txt"
rm -rf "$OUT/bench"
echo "== done $(date -u +%T)"
