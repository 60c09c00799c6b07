#!/usr/bin/env bash
# One GPU call: the torch pytest file per test (own_code_torch.sh), the start-up floor (startup_floor.sh), and
# the 384-case grid at K = 1, 2, 4, 8 with a watcher (slots_hang.sh), matmul-throughput idle vs busy (slots.sh).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$SECONDS; OUT="$OUT" timeout -k 5 100 bash tests/gpu/own_code_torch.sh > /dev/null 2>&1
echo "own_code_torch.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 90 bash tests/gpu/startup_floor.sh > /dev/null 2>&1
echo "startup_floor.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 170 bash tests/gpu/slots_hang.sh 150 > /dev/null 2>&1
echo "slots_hang.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" SKIP_BENCH=1 timeout -k 5 200 bash tests/gpu/slots.sh > /dev/null 2>&1
echo "slots.sh (service half) rc=$? after $((SECONDS - t0)) s"
