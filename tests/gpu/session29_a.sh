#!/usr/bin/env bash
# Session 29, call 1: torch's import on a second thread (Settings.torch_prefetch, on by default) on the cold path.
# Session 28 (call 5, an H100): `cuprobe sweep run`'s path (the 384-case grid at K = 8, nothing made before the
# clock) ran at a median 136,358 cases per GPU-hour; the slowest process spent 1.8-2.2 s in its guarded cases, whose
# last one held torch's import, against 0.1-0.6 s where the processes were made (and torch imported) before the clock.
# The harness now imports torch on a second thread from its start where its parameters use torch, beside its kernel
# cases (probes/prefetch.py; the runner passes --prefetch-torch to sanitizer runs of Probe.warms probes).
# 1. The gpu tests of the early import and of the quick exit (tests/gpu/test_core_gpu.py), compute-sanitizer 2025.3.
# 2. The cold path: the defaults against CUPROBE_TORCH_PREFETCH=0, rotating who goes first, until AB_DEADLINE_S
#    (default 280).
# Predicted (written before this call): the tests pass (the same records, findings and verdicts early and late); cold
# at K = 8, torch's import on its thread 2-3.5 s per process (slower than alone: eight at once, sharing the GIL with the
# kernel cases), the slowest process's guarded cases from 1.8-2.2 s down to 0.3-1.0 s, its unguarded cases up to
# 0.5 s slower (the GIL), before the first case up to 0.3 s slower; cases per GPU-hour median 145,000-160,000 with
# the early import against 130,000-140,000 without, the early import ahead in most rounds.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session29_a.sh
COLD_SHOW="slowest process|its run stage|before the first case|second thread|the exit|NOT RUN|confirmations"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
timeout 200 python3 -m pytest tests/gpu/test_core_gpu.py -m gpu -q -p no:cacheprovider --timeout 120 -rA \
  -k "early_torch or quick_exit" > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -12
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    late-import) cold_round "$1" "$2" CUPROBE_TORCH_PREFETCH=0 ;;
  esac
}
cold_rounds 280 late-import defaults  # round 1: defaults first
cold_done
