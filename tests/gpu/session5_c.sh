#!/usr/bin/env bash
# Session 5, third GPU call: tests/gpu/slots.sh's service half — matmul-throughput through a worker with 4 slots,
# idle three times and then while sweep jobs hold the other slots (tests/gpu/throughput_busy.py) — with the stall
# watcher of tests/gpu/stall_lib.sh looking inside any narrow-matmul target that runs past 60 s.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session5_c.sh
set -u
OUT=${OUT:-/tmp/out}; O="$OUT/stall"; mkdir -p "$O"
source tests/gpu/stall_lib.sh
echo "== service half $(date -u +%T)"
watch_stalls 90 1 & watcher=$!
SKIP_BENCH=1 timeout 280 bash tests/gpu/slots.sh > /dev/null 2>&1
echo "slots.sh rc=$?"
kill $watcher 2>/dev/null
echo "== done $(date -u +%T)"
