#!/usr/bin/env bash
# Session 8, seventh GPU call: which work of a sweep process does not overlap with other processes on one GPU.
# tests/gpu/record_cost.py with record-free variants: the guarded kernel (pycuda only) and torch (cuBLAS), each as
# 16 cases in one process, 4 cases alone, and 4 x 4 cases at once (compute-sanitizer 2025.3, initcheck, device
# backtraces). From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_f.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
OLD=/usr/local/cuda/bin/compute-sanitizer
for v in guarded torch unguarded; do
  echo "== $v $(date -u +%T)"
  CUPROBE_SANITIZER_PATH=$OLD timeout 150 python3 tests/gpu/record_cost.py --rounds 1 --k 4 --variants $v \
    --backtraces device > "$OUT/overlap-$v.txt" 2>&1
  echo "rc=$?"; cat "$OUT/overlap-$v.txt"
done
echo "== done $(date -u +%T)"
