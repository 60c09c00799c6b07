#!/usr/bin/env bash
# Session 30, call 3: which of process A's per-case steps the others' context creation slows.
# Call 2 (session30_b.sh at f7522fa, H100): A's initcheck cases (a fresh buffer allocated, read unwritten, freed)
# ran at 0.46-0.50 of their rate while four other processes created a CUDA context and loaded a module, bare or under
# initcheck alike; torch's import in them (no CUDA) 0.89-1.06, the CPU 1.05-1.06, the control 1.00-1.06; A bare
# 0.82-0.85. Now A either allocates and frees a buffer per case (as before, and as a narrow-matmul case does) or reads
# one buffer allocated once (--reuse: the same records per case, no allocation).
# Predicted (written before this call): if the driver's allocation path is what the context creation holds, the
# reused buffer keeps A at 0.85-1.0 during the others' start-ups and the allocating A drops to about 0.5 as in call 2;
# if it is the launch or the synchronisation (or the sanitizer's record path), both drop alike.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== $(date -u +%T) start"
s=tests/gpu/start_interference.py
for pass in 1 2; do
  for mode in "--what none --reuse" "--what context --others-bare" "--what context --others-bare --reuse" \
              "--what context --reuse"; do
    echo -n "pass $pass: "; timeout 60 python3 $s $mode 2>&1 | tail -1
  done
done
echo "== done $(date -u +%T)"
