#!/usr/bin/env bash
# Session 6, first GPU call: does the K > 1 stall happen without cuprobe (tests/gpu/stall_repro.py: pycuda only,
# with the PyPI sanitizer cuprobe uses and with the CUDA toolkit's), then the 384-case sweep at K = 4 with the
# progress watchdog at 30 s (a stalled process is stopped and run again; bench/sweep.py counts them).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session6_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NEW=$(python3 -c 'from service.sanitizer.locate import find_sanitizer; print(find_sanitizer(None))')
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== sanitizers: $NEW ($("$NEW" --version | tail -1)); $OLD ($("$OLD" --version | tail -1))"
echo "== repro, cuprobe's sanitizer, K = 4 and 8 $(date -u +%T)"
timeout 330 python3 tests/gpu/stall_repro.py --sanitizer "$NEW" --procs 4,8 --rounds 2 --iters 96 --stall-s 20 \
  --limit-s 75 --out "$OUT/repro-new" 2>&1 | tee "$OUT/repro-new.txt"
echo "== repro, the toolkit's sanitizer, K = 4 $(date -u +%T)"
timeout 170 python3 tests/gpu/stall_repro.py --sanitizer "$OLD" --procs 4 --rounds 2 --iters 96 --stall-s 20 \
  --limit-s 75 --out "$OUT/repro-old" 2>&1 | tee "$OUT/repro-old.txt"
echo "== sweep K = 4 with the watchdog at 30 s $(date -u +%T)"
CUPROBE_STALL_S=30 timeout 200 python3 bench/sweep.py --full --skip-compare --slots 4 --out "$OUT/sweep-k4" \
  > "$OUT/sweep-k4.txt" 2> "$OUT/sweep-k4.err"
echo "sweep rc=$?"; tail -8 "$OUT/sweep-k4.txt"
echo "== done $(date -u +%T)"
