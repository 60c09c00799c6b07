#!/usr/bin/env bash
# Session 6, second GPU call: the toolkit's compute-sanitizer (2025.3), which did not stall in stall_repro.py at
# K = 4, through cuprobe's own sweep at K = 1, 2, 4, 8 (bench/sweep.py --full: the 48-case grid against one process
# per case, and the 384-case grid), with the watchdog at 30 s counting any stall; then stall_repro.py at K = 8 with it.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session6_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== sweep with $OLD ($("$OLD" --version | tail -1)) $(date -u +%T)"
CUPROBE_SANITIZER_PATH=$OLD CUPROBE_STALL_S=30 timeout 420 python3 bench/sweep.py --full --slots 1,2,4,8 \
  --out "$OUT/sweep-old" > "$OUT/sweep-old.txt" 2> "$OUT/sweep-old.err"
echo "sweep rc=$?"; tail -22 "$OUT/sweep-old.txt"
echo "== repro, the toolkit's sanitizer, K = 8 $(date -u +%T)"
timeout 120 python3 tests/gpu/stall_repro.py --sanitizer "$OLD" --procs 8 --rounds 1 --iters 96 --stall-s 20 \
  --limit-s 75 --out "$OUT/repro-old8" 2>&1 | tee "$OUT/repro-old8.txt"
echo "== done $(date -u +%T)"
