#!/usr/bin/env bash
# One GPU call: confirm.sh (without the A3 steps, measured before), then own_code_torch.sh.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/confirm"
t0=$SECONDS
OUT="$OUT/confirm" SKIP="a3_uncached a3_caching" HARD_S=330 timeout -k 5 380 bash tests/gpu/confirm.sh > /dev/null 2>&1
echo "confirm.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS
OUT="$OUT" timeout -k 5 170 bash tests/gpu/own_code_torch.sh > /dev/null 2>&1
echo "own_code_torch.sh rc=$? after $((SECONDS - t0)) s"
