#!/usr/bin/env bash
# Session 7, second GPU call: the 384-case grid (bench/sweep.py --full --skip-compare) with the toolkit's
# compute-sanitizer (2025.3) at K = 1, 2, 4, 8, each cold and with K spares ready before the clock starts.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session7_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%T); $OLD: $("$OLD" --version | tail -1)"
CUPROBE_SANITIZER_PATH=$OLD CUPROBE_STALL_S=30 timeout 480 python3 bench/sweep.py --full --skip-compare \
  --slots "${SLOTS:-1,2,4,8}" --out "$OUT/sweep384" > "$OUT/sweep384.txt" 2> "$OUT/sweep384.err"
echo "sweep rc=$?"; tail -12 "$OUT/sweep384.txt"
echo "== done $(date -u +%T)"
