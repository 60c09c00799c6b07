#!/usr/bin/env bash
# Session 29, call 2: torch's early import with Python's switch interval shortened while it runs.
# Call 1 (session29_a.sh at ae31262, an H100): on the cold path (the 384-case grid at K = 8, nothing made before the
# clock) the early import took the slowest process's guarded cases from 1.7-2.1 s to 0.2 s in every round, but its
# unguarded cases went from 3.9-4.6 s to 4.4-6.2 s and the start before the first case from 1.5-2.0 s to 1.8-2.6 s;
# cases per GPU-hour median 144,965 against 135,766, ahead in 6 of 10 paired rounds. The likely cause: the GIL. The
# probe's thread gives it up for each CUDA call (copies, synchronizes) and then waits up to Python's switch interval
# (5 ms) to get it back from the import running Python on the other thread, several times per case.
# The harness now shortens the interval while the import runs (--prefetch-torch SWITCH_MS; Settings
# torch_prefetch_switch_ms, default 0.5).
# 1. The gpu tests of the early import (tests/gpu/test_core_gpu.py), both sanitizers.
# 2. The cold path: the defaults (early, 0.5 ms), early at Python's own interval (CUPROBE_TORCH_PREFETCH_SWITCH_MS=0)
#    and the late import (CUPROBE_TORCH_PREFETCH=0), rotating who goes first, until AB_DEADLINE_S (default 360).
# Predicted (written before this call): the tests pass; at 0.5 ms the slowest process's unguarded cases within 0.3 s
# of the late import's, its guarded cases 0.2 s as in call 1, torch's import on its thread 3-4.5 s (slower: it gives
# up the GIL more often); medians 150,000-160,000 (0.5 ms), 140,000-148,000 (Python's own), 132,000-140,000 (late),
# 0.5 ms ahead of the late import in most rounds.
# After this call the switch interval was taken out again (it changed nothing; session29_c.sh): this script ran at
# 02f7705, where CUPROBE_TORCH_PREFETCH_SWITCH_MS existed.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session29_b.sh
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH; timeout 150 python3 -m pytest tests/gpu/test_core_gpu.py -m gpu -q -p no:cacheprovider \
  --timeout 120 -rA -k "early_torch" > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -8
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    own-interval) cold_round "$1" "$2" CUPROBE_TORCH_PREFETCH_SWITCH_MS=0 ;;
    late-import) cold_round "$1" "$2" CUPROBE_TORCH_PREFETCH=0 ;;
  esac
}
cold_rounds 360 defaults own-interval late-import
cold_done
