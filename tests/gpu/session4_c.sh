#!/usr/bin/env bash
# One GPU call: the torch pytest file per test (own_code_torch.sh), the 384-case grid at K = 1, 2, 4, 8 with a
# watcher (slots_hang.sh), matmul-throughput idle vs while sweep jobs fill the slots (slots.sh's service half).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$SECONDS; OUT="$OUT" timeout -k 5 80 bash tests/gpu/own_code_torch.sh > /dev/null 2>&1
echo "own_code_torch.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 145 bash tests/gpu/slots_hang.sh 130 > /dev/null 2>&1
echo "slots_hang.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" SKIP_BENCH=1 timeout -k 5 150 bash tests/gpu/slots.sh > /dev/null 2>&1
echo "slots.sh (service half) rc=$? after $((SECONDS - t0)) s"
