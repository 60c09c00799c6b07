#!/usr/bin/env bash
# Session 8, eighth GPU call: the same overlap measurement with the sweep's mix in every process (unguarded, guarded
# and torch cases together, as each K = 4 process of the 48-case sweep has them): 48 cases in one process, one
# quarter alone, four quarters at once (compute-sanitizer 2025.3, initcheck, device backtraces, all cold).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_g.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== mixed $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer timeout 170 python3 tests/gpu/record_cost.py --rounds 1 \
  --k 4 --variants unguarded,guarded,torch --backtraces device > "$OUT/overlap-mixed.txt" 2>&1
echo "rc=$?"; cat "$OUT/overlap-mixed.txt"
echo "== done $(date -u +%T)"
