#!/usr/bin/env bash
# Next: what the confirmation still costs now that its four re-runs are ready before the sweep (the bench's default
# since session 23), and whether a round that exits 1 says why (bench/sweep.py's `NOT RUN` line, new: session 26's
# first defaults round had one batch end 0.2 s in with no XML, cause not in the log). Rounds of the 384-case grid at
# K = 8 with spares ready, the defaults against the confirmation off (CUPROBE_CONFIRM=0), rotating who goes first,
# until AB_DEADLINE_S (default 240).
# Predicted (written before this call): on an H100 like session 26's first (defaults 234,301 cases per GPU-hour) the
# confirmation off 5-15 % above the defaults; on an H200 the defaults 125,000-150,000 and the confirmation off
# 150,000-180,000 (sessions 13-21); the defaults' re-run medians 0.8-2 ms a case; no NOT RUN line (one such round in
# about twenty so far).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session26_b.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 240 defaults off
ab_done
