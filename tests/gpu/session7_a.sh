#!/usr/bin/env bash
# Session 7, first GPU call: warm starts. (1) tests/gpu/warm_check.py: one narrow-matmul initcheck request run cold,
# then handed to spares one after another — same findings, and what a spare saves; (2) bench/sweep.py on the 48-case
# grid with the toolkit's compute-sanitizer (2025.3, no stall at K > 1): the baseline (one cold process per case),
# one process per case with warm starts, and batched at K = 1, 2, 4 cold and with K spares ready.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session7_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%T); $OLD: $("$OLD" --version | tail -1)"
echo "== warm_check (2025.3) $(date -u +%T)"
CUPROBE_SANITIZER_PATH=$OLD timeout 150 python3 tests/gpu/warm_check.py --runs 4 > "$OUT/warm-check-old.txt" 2>&1
echo "rc=$?"; tail -12 "$OUT/warm-check-old.txt"
echo "== sweep 48 (2025.3) $(date -u +%T)"
CUPROBE_SANITIZER_PATH=$OLD CUPROBE_STALL_S=30 timeout 400 python3 bench/sweep.py --slots 1,2,4 \
  --out "$OUT/sweep48" > "$OUT/sweep48.txt" 2> "$OUT/sweep48.err"
echo "sweep rc=$?"; tail -14 "$OUT/sweep48.txt"
echo "== done $(date -u +%T)"
