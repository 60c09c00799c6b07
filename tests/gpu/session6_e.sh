#!/usr/bin/env bash
# Session 6, fifth GPU call: replay's digest overhead table on the H200 with the new `no output grads` row
# (output_grads = "none": module outputs, parameter gradients and parameters, no gradients of module outputs).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session6_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "== replay overhead $(date -u +%T)"
timeout 200 python3 bench/replay.py --device cuda --steps 20 --rounds 5 2>&1 | tee "$OUT/replay-overhead-cuda.txt"
echo "== done $(date -u +%T)"
