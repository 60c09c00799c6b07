#!/usr/bin/env bash
# Session 27, call 2: hold the sweep's ready re-runs until every batch of the grid has ended its sanitizer run
# (CUPROBE_CONFIRM_HOLD=1: service/probing/confirm_shared.py), against the defaults and the confirmation off.
# Rounds of the 384-case grid at K = 8 with spares and re-runs ready, rotating who goes first, until AB_DEADLINE_S
# (default 270).
# Why: call 1 (tests/gpu/session26_b.sh on an H100) had the defaults at a median of 168,153 cases per GPU-hour and
# the confirmation off at 223,722 (mean walls about 8.0 and 6.3 s). Of the difference, about 1.0 s was in the
# unguarded cases of the slowest process (while the four re-runs ran their 256 cases each beside the eight sanitizer
# processes) and about 0.5 s in the confirmer's control cases, which only the confirmation runs.
# Predicted (written before this call): held, the unguarded cases run as fast as with the confirmation off and the
# re-runs add 0.3-0.6 s after the last batch (their cases alone, a result written, the decision), so the hold's
# median 5-12 % above the defaults' and still 10-25 % below the confirmation off's; on an H200 the defaults
# 125,000-150,000 and the hold 135,000-165,000. Every round's findings benign, the controls right, `held until the
# grid had run in 8` on every hold row, no NOT RUN line.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session27_a.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    hold) ab_round "$1" "$2" CUPROBE_CONFIRM_HOLD=1 ;;
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 270 defaults hold off
ab_done
