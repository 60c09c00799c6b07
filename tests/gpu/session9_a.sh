#!/usr/bin/env bash
# Session 9, first GPU call: (1) the digest tests on CUDA (the Triton path after its last change: launch on the
# batch's own device); (2) where a batched sweep's time goes: tests/gpu/sweep_stages.py, the 48-case grid at K = 1 and
# 4, cold and with spares ready, confirmation on and off, each process's stages (compute-sanitizer 2025.3.1.0);
# (3) bench/replay.py once.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session9_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== digest tests on CUDA $(date -u +%T)"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/unit/probes/test_replay_triton.py \
  tests/unit/probes/test_replay_digest.py 2>&1 | tail -4 | tee "$OUT/digest-tests.txt"
echo "== sweep stages $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30 timeout 330 \
  python3 tests/gpu/sweep_stages.py --slots 1,4 --warm > "$OUT/sweep-stages.txt" 2> "$OUT/sweep-stages.err"
echo "rc=$?"; cat "$OUT/sweep-stages.txt"
echo "== replay overhead $(date -u +%T)"
timeout 100 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead.txt" 2>&1
echo "rc=$?"; cat "$OUT/replay-overhead.txt"
echo "== done $(date -u +%T)"
