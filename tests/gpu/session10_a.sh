#!/usr/bin/env bash
# Session 10's GPU call (written 2026-12-04, when no device time was left; for the next session with some):
# (1) bench/slots_parse.py on the box's 16 cores: K parses at once in one process, here against child processes;
# (2) bench/sweep.py on the 384-case grid at K = 4 (the default), cold and with spares ready, each with the slots'
#     XML parsed in child processes (the default now) and here (as before), side by side (compute-sanitizer
#     2025.3.1.0, watchdog 30 s);
# (3) bench/replay.py with replay's new default (output_grads none) and the `output grads, retain` row beside it.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session10_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nproc; uptime
echo "== slots parse $(date -u +%T)"
timeout 120 python3 bench/slots_parse.py --slots 1,2,4,8 --repeat 3 > "$OUT/slots-parse.txt" 2>&1
echo "rc=$?"; cat "$OUT/slots-parse.txt"
echo "== bench/sweep.py 384-case, K = 4, parse in children and here $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30 timeout 300 \
  python3 bench/sweep.py --skip-compare --full --slots 4 --compare-parse --out "$OUT/bench" \
  > "$OUT/sweep384.txt" 2> "$OUT/sweep384.err"
echo "rc=$?"; cat "$OUT/sweep384.txt"
rm -rf "$OUT/bench"
echo "== bench/replay.py $(date -u +%T)"
timeout 150 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead.txt" 2>&1
echo "rc=$?"; cat "$OUT/replay-overhead.txt"
echo "== done $(date -u +%T)"
