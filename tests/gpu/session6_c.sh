#!/usr/bin/env bash
# Session 6, third GPU call: how often compute-sanitizer 2026.4.0.0 stalls at K = 2 (tests/gpu/stall_repro.py,
# pycuda only), which decides whether K = 2 or 1 is the safe default with it; then what `cuprobe doctor` says now.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session6_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NEW=$(python3 -c 'from service.sanitizer.locate import find_sanitizer; print(find_sanitizer(None))')
echo "== repro, $NEW ($("$NEW" --version | tail -1)), K = 2 $(date -u +%T)"
timeout 250 python3 tests/gpu/stall_repro.py --sanitizer "$NEW" --procs 2 --rounds 5 --iters 96 --stall-s 20 \
  --limit-s 45 --out "$OUT/repro-new2" 2>&1 | tee "$OUT/repro-new2.txt"
echo "== cuprobe doctor $(date -u +%T)"
timeout 60 python3 -m cuprobe.service.cli doctor 2>&1 | tee "$OUT/doctor.txt"
echo "== done $(date -u +%T)"
