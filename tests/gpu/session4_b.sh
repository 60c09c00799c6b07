#!/usr/bin/env bash
# One GPU call: where the start-up floor comes from (startup_floor.sh), the 384-case grid at K = 1, 2, 4, 8
# (bench/sweep.py --full --skip-compare), and matmul-throughput idle vs during a sweep (slots.sh's second half).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$SECONDS
OUT="$OUT" timeout -k 5 150 bash tests/gpu/startup_floor.sh > /dev/null 2>&1
echo "startup_floor.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS
OUT="$OUT" BENCH_ARGS="--full --skip-compare --slots 1,2,4,8" BENCH_S=200 timeout -k 5 420 bash tests/gpu/slots.sh > /dev/null 2>&1
echo "slots.sh rc=$? after $((SECONDS - t0)) s"
