#!/usr/bin/env bash
# Session 6, fourth GPU call: how one process's time per case grows with K when nothing stalls (the toolkit's
# compute-sanitizer 2025.3.1.0, tests/gpu/stall_repro.py, pycuda only: no torch import, no cuprobe), K = 1, 2, 4, 8
# in one run, one round each — the steady per-case time and all K processes' cases per second.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session6_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== repro scaling, $OLD ($("$OLD" --version | tail -1)) $(date -u +%T)"
nproc; nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv
timeout 200 python3 tests/gpu/stall_repro.py --sanitizer "$OLD" --procs 1,2,4,8 --rounds 1 --iters 96 --stall-s 20 \
  --limit-s 60 --out "$OUT/scaling" 2>&1 | tee "$OUT/scaling.txt"
echo "== done $(date -u +%T)"
