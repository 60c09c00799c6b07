#!/usr/bin/env bash
# Session 8, second GPU call: (1) where replay's per-step cost goes with output_grads none and retain
# (tests/gpu/replay_profile.py: no-op global hooks, the tape's hooks recording nothing, records without digests,
# the full tape, and cProfile of bare and full); (2) the core's GPU tests (tests/gpu/core.sh).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for grads in none retain; do
  echo "== replay profile, output_grads $grads $(date -u +%T)"
  timeout 90 python3 tests/gpu/replay_profile.py --device cuda --steps 40 --output-grads $grads \
    > "$OUT/replay-profile-$grads.txt" 2>&1
  echo "rc=$?"; head -8 "$OUT/replay-profile-$grads.txt"
done
echo "== core $(date -u +%T)"
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
echo "core rc=$?"; grep -E "passed|failed|error|exit=" "$OUT/core.log" | tail -20
echo "== done $(date -u +%T)"
