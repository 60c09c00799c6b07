#!/usr/bin/env bash
# Session 9, last GPU call: the confirmation's verdicts on the real kernels with the re-runs started beside the
# sanitizer run and the bytecode cache (tests/gpu/confirm.sh's uninit-read, narrow-matmul and bf16-matmul steps).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session9_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OUT=$OUT/confirm SKIP="a3_uncached a3_caching planted_memcheck planted_racecheck planted_synccheck" HARD_S=125 \
  bash tests/gpu/confirm.sh > /dev/null 2>&1
tail -45 "$OUT/confirm/confirm.log"
tar czf "$OUT/confirm.tar.gz" -C "$OUT" confirm && rm -rf "$OUT/confirm"
