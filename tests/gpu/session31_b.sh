#!/usr/bin/env bash
# Session 31, call 2: call 1's cold A/B again, on another box where one is lent (the box-to-box spread of this path
# has been larger than most settings' effect: session 29). The defaults (the torch cases packed into one batch of
# the 384-case grid at K = 8) against CUPROBE_BENCH_NEEDS_IGNORED=1 (16 in each of the eight batches, as the planner's
# chunks had them), rotating who goes first, until AB_DEADLINE_S (default 200).
# Call 1 (an H100, at ea53905): medians 151,214 against 124,217 cases per GPU-hour, the defaults ahead in 9 of 9.
# Predicted (written before this call): the defaults ahead in every paired round, their median 12-25 % above the
# other's and 140,000-170,000 cases per GPU-hour; the slowest process never the one with the torch cases.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session31_b.sh
COLD_SHOW="slowest process|its run stage|before the first case|second thread|NOT RUN|confirmations"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    needs-ignored) cold_round "$1" "$2" CUPROBE_BENCH_NEEDS_IGNORED=1 ;;
  esac
}
cold_rounds 200 needs-ignored defaults  # round 1: defaults first
cold_done
