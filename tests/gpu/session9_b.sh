#!/usr/bin/env bash
# Session 9, second GPU call: (1) where a confirmation's bare re-run spends its time (tests/gpu/bare_profile.py);
# (2) tests/gpu/sweep_stages.py again, now that the re-runs start beside the sanitizer run (compute-sanitizer
# 2025.3.1.0); (3) the replay probe end to end with the Triton digest (tests/gpu/replay.sh, CPU overhead row skipped).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session9_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== bare profile $(date -u +%T)"
timeout 120 python3 tests/gpu/bare_profile.py > "$OUT/bare-profile.txt" 2>&1
echo "rc=$?"; head -60 "$OUT/bare-profile.txt"
echo "== sweep stages $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30 timeout 240 \
  python3 tests/gpu/sweep_stages.py --slots 1,4 --warm > "$OUT/sweep-stages.txt" 2> "$OUT/sweep-stages.err"
echo "rc=$?"; cat "$OUT/sweep-stages.txt"
echo "== replay $(date -u +%T)"
HARD_S=200 SKIP=overhead_cpu OUT=$OUT bash tests/gpu/replay.sh > /dev/null 2>&1
echo "rc=$?"; tail -40 "$OUT/replay.log"
tar czf "$OUT/replay.tar.gz" -C "$OUT" replay replay.log && rm -rf "$OUT/replay" "$OUT/replay.log"
echo "== done $(date -u +%T)"
