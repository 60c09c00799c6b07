#!/usr/bin/env bash
# Session 30, call 8: tests/gpu/test_worker_warm_gpu.py after the final review's mends (the exclusive taker now kills
# a spare with probes.proctree's stop_run and waits on group_alive; the sweep's warm level comes from spares.level_of).
# Predicted (written before this call): 3 passed, 559-657 MiB given back as in calls 1 and 7.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_h.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30
echo "== $(date -u +%T) start"
timeout 200 python3 -m pytest tests/gpu/test_worker_warm_gpu.py -m gpu -q -p no:cacheprovider --timeout 180 -rA -s \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|GPU memory used" "$OUT/tests.log" | cut -c1-200 | tail -8
echo "== done $(date -u +%T)"
