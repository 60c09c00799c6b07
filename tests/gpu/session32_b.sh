#!/usr/bin/env bash
# Session 32, call 2: the defaults as they now stand (the confirmation's re-runs in 2 processes,
# CUPROBE_CONFIRM_PROCESSES=2) against one process per re-run (4, the old default), and against the defaults with
# torch's import counted as 1,000 records instead of 3,000 (CUPROBE_BENCH_TORCH_RECORDS=1000: the batch with the torch
# cases takes 5,312 records, the others 8,320, against 3,616 and 8,544-8,576). The cold path (`cuprobe sweep run`'s:
# the 384-case grid at K = 8, nothing made before the clock), rotating who goes first, until AB_DEADLINE_S
# (default 330).
# Predicted (written before this call, from call 1 on an H100: medians 187,702 at 2 against 182,647 at 4, every
# process's time before its first case about 0.3 s shorter): on another box the defaults 2-5 % above 4 in the median
# and ahead in most paired rounds; the time before the first case 0.2-0.4 s shorter in every round. torch-1000: the
# batch with the torch cases ends within 0.5 s of the others' median (it ended 1.4-1.7 s early at 3,000 in session 31),
# and the median 0-3 % above the defaults, within the spread. Every finding benign, every control right.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session32_b.sh
COLD_SHOW="slowest process|with torch's cases|before the first case|re-runs took|NOT RUN"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    four) cold_round "$1" "$2" CUPROBE_CONFIRM_PROCESSES=4 ;;
    torch-1000) cold_round "$1" "$2" CUPROBE_BENCH_TORCH_RECORDS=1000 ;;
  esac
}
cold_rounds 330 torch-1000 defaults four  # round 1: defaults first
cold_done
