#!/usr/bin/env bash
# Session 31, call 1: batches packed by what their cases need. The planner now puts the torch variant's cases into
# as few batches as keep the batches' costs even, counting torch's import once a batch (3,000 records,
# service/sweep/plan.py NEED_RECORDS); a batch runs exactly its cases (narrow-matmul's `cases`). At K = 8 the
# 384-case grid's 128 torch cases all go to one batch, which carries 3,616 records against 8,544-8,576 in the
# seven others, and those seven never import torch. Before, each of the eight batches had 16 torch cases and
# imported torch on its second thread (3.9-4.8 s on session 30's call-7 H100) beside its kernel cases.
# 1. tests/gpu/test_packed_batches_gpu.py on the box's sanitizers: a 48-case grid in four packed batches finds
#    what one process finds, case by case, and only one of the four processes imports torch.
# 2. The cold path (`cuprobe sweep run`'s: 384 cases at K = 8, nothing made before the clock), the defaults against
#    CUPROBE_BENCH_NEEDS_IGNORED=1 (the planner not counting the import: torch's cases spread over the batches),
#    rotating who goes first, until AB_DEADLINE_S (default 270).
# Predicted (written before this call): the test passes on every sanitizer. Cold: "torch's import on its second
# thread" in 1 process (defaults) against 7-8 (ignored); the slowest process's unguarded cases 3.5-4.6 s against
# 4.3-6.3 s; wall 0.5-1.0 s less; cases per GPU-hour median 140,000-160,000 against 127,000-145,000 (+5-10 %), the
# defaults ahead in most paired rounds; the batch with the torch cases ends within 0.5 s of the others (not the
# slowest in most rounds). Every finding benign, every control right, in both.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session31_a.sh
COLD_SHOW="slowest process|its run stage|before the first case|second thread|NOT RUN|confirmations"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH; timeout 240 python3 -m pytest tests/gpu/test_packed_batches_gpu.py -m gpu -q \
  -p no:cacheprovider --timeout 200 -rA > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error" "$OUT/tests.log" | cut -c1-300 | tail -12
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    needs-ignored) cold_round "$1" "$2" CUPROBE_BENCH_NEEDS_IGNORED=1 ;;
  esac
}
cold_rounds 270 needs-ignored defaults  # round 1: defaults first
cold_done
