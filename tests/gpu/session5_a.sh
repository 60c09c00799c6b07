#!/usr/bin/env bash
# Session 5, first GPU call: what the stalled K > 1 target spins on (tests/gpu/stall.sh), then where replay's
# per-step time goes on the H200 (tests/gpu/replay_profile.py) and the digest overhead table (bench/replay.py).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session5_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "== stall (K = 4, then K = 2) $(date -u +%T)"
bash tests/gpu/stall.sh 70 35
echo "== replay profile $(date -u +%T)"
timeout 120 python3 tests/gpu/replay_profile.py --device cuda --steps 40 > "$OUT/replay-profile.txt" 2>&1
echo "== replay overhead $(date -u +%T)"
timeout 90 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead-cuda.txt" 2>&1
echo "== done $(date -u +%T)"
