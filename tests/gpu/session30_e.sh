#!/usr/bin/env bash
# Session 30, call 5: torch's import inside the process whose cases it slows (session 29's open question).
# Session 29: with torch imported on a second thread from a sweep process's start, that process's kernel cases ran
# slower (4.3-6.2 s against 3.7-4.6 s), not because of the GIL (a 0.5 ms switch interval changed nothing) nor the
# CPU's scheduling (nice +10 changed nothing). Calls 2-3 this session: torch imported in *other* processes costs a
# sanitizer process's cases nothing (0.89-1.06), where other processes' context creation halves them. Now A imports
# torch itself, on a second thread, 2.5 s after its first case (tests/gpu/start_interference.py --what torch-in-a).
# Predicted (written before this call): under initcheck A's cases run at 0.5-0.8 of their rate while the import
# runs (the sanitizer's hooks in A's own process: torch's libraries register their CUDA code as they load); bare,
# 0.85-1.0; the control 0.95-1.05.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== $(date -u +%T) start"
s=tests/gpu/start_interference.py
for pass in 1 2 3; do
  for mode in "--what none" "--what torch-in-a" "--what torch-in-a --bare-a"; do
    echo -n "pass $pass: "; timeout 60 python3 $s $mode 2>&1 | tail -1
  done
done
echo "== done $(date -u +%T)"
