#!/usr/bin/env bash
# One GPU call: the torch pytest file per test (own_code_torch.sh), the start-up floor (startup_floor.sh), and
# the 384-case grid at K = 2 with a watcher (slots_hang.sh).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$SECONDS; OUT="$OUT" timeout -k 5 100 bash tests/gpu/own_code_torch.sh > /dev/null 2>&1
echo "own_code_torch.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 130 bash tests/gpu/startup_floor.sh > /dev/null 2>&1
echo "startup_floor.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 140 bash tests/gpu/slots_hang.sh 120 > /dev/null 2>&1
echo "slots_hang.sh rc=$? after $((SECONDS - t0)) s"
