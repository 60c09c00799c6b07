#!/usr/bin/env bash
# Session 30, call 7: the code as it lands. tests/gpu/test_worker_warm_gpu.py again (since call 1: the registry
# matches a file in a spare's folder, and a pool process clears the folders of ended ones), and four rounds of
# `cuprobe sweep run`'s cold path (the 384-case grid at K = 8, nothing made before the clock), whose spares code
# changed shape this session (a take that may wait, asks that carry their key) but not behaviour.
# Predicted (written before this call): the tests pass on the box's sanitizers; the cold rounds within session 29's
# spread on H100s (127,000-182,000 cases per GPU-hour), every finding benign, every control right.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_g.sh
COLD_SHOW="confirmations: |NOT RUN"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH; timeout 200 python3 -m pytest tests/gpu/test_worker_warm_gpu.py -m gpu -q \
  -p no:cacheprovider --timeout 180 -rA -s > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|GPU memory used" "$OUT/tests.log" | cut -c1-200 | tail -8
for round in 1 2 3 4; do cold_round "$round" defaults; done
cold_done
