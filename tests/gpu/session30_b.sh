#!/usr/bin/env bash
# Session 30, call 2: does another process's start-up slow a sanitizer process's kernel cases?
# Call 1 (session30_a.sh at 3ca4917, H100): through the service with the GPU worker's spares, the second and third
# waves' jobs ran 1.3-1.5 s faster (2.5-3.7 s against 3.6-4.9 s cold), but the first wave's ran 1.5 s slower
# (5.6-6.4 s against 4.3-4.9 s) while the spares for the second wave started beside it: median wall 14.1 s against
# 14.9 s (5 %). Session 29 saw the same shape inside one process (kernel cases slower beside torch's import; not the
# GIL, not the CPU's scheduling). tests/gpu/start_interference.py times process A's kernel cases (fresh buffer, a
# kernel reading it unwritten, 256 initcheck records a case, XML saved as cuprobe does) before, during and after four
# other processes' start-ups, pycuda only.
# Predicted (written before this call), if a start-up holds something of the driver's or the GPU's that a sanitizer
# process's cases need: A's rate during/before 0.4-0.7 with four contexts started under initcheck, 0.8-0.95 with
# them bare, 0.85-1.0 with torch imported (bare or under initcheck: no CUDA call), 0.95-1.0 for the CPU and the
# control; A bare beside contexts started under initcheck 0.6-0.9. If it is the host (memory, page cache) instead,
# torch's import costs A as much as a context does.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== $(date -u +%T) start"
s=tests/gpu/start_interference.py
for pass in 1 2; do
  for mode in "--what none" "--what context" "--what context --others-bare" "--what torch --others-bare" \
              "--what torch" "--what cpu --others-bare" "--what context --bare-a"; do
    echo -n "pass $pass: "; timeout 60 python3 $s $mode 2>&1 | tail -1
  done
done
echo "== done $(date -u +%T)"
