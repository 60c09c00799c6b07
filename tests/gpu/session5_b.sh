#!/usr/bin/env bash
# Session 5, second GPU call: replay's digest overhead (output gradients kept by autograd, the default, beside
# one Python hook per output), then tests/gpu/slots.sh's bench half (bench/sweep.py --full --slots 1,2,4,8: the
# 48-case baseline and batched runs, the 384-case grid at each K) with a watcher that looks inside any target
# that runs past 60 s (tests/gpu/stall_lib.sh).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session5_b.sh
set -u
OUT=${OUT:-/tmp/out}; O="$OUT/stall"; mkdir -p "$O"
source tests/gpu/stall_lib.sh
echo "== replay overhead $(date -u +%T)"
timeout 100 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead-cuda.txt" 2>&1
echo "== slots bench $(date -u +%T)"
watch_stalls 60 2 & watcher=$!
SKIP_SERVICE=1 BENCH_S=${BENCH_S:-400} timeout 450 bash tests/gpu/slots.sh > /dev/null 2>&1
kill $watcher 2>/dev/null
echo "== done $(date -u +%T)"
