#!/usr/bin/env bash
# Session 28, call 4 (on an H200 where one is lent): the defaults with the quick exit against CUPROBE_QUICK_EXIT=0.
# Calls 2 and 3 (H100s) took the exit's median at K = 8 from 0.84-1.21 s to 0.49-0.67 s and put the defaults at
# medians of 169,320 and 171,006 cases per GPU-hour. The H200 last ran the bench's grid in session 20 (the confirmation
# then slower) and `cuprobe sweep run`'s path at 129,072 in session 25.
# The 384-case grid at K = 8 with spares ready, rotating, until AB_DEADLINE_S (default 200).
# Predicted (written before this call): the exit's medians about half with the quick exit, as on the H100s; the
# defaults 140,000-180,000 cases per GPU-hour on the H200 (its sweeps ran 10-40 % slower than the H100s' in sessions
# 20-25), ahead of CUPROBE_QUICK_EXIT=0 in most rounds.
# (Run once, at 33da990: the call asked for an H200 and got an H100; docs/sweep.md, "Session 28".)
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session28_d.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
lscpu | grep -E "Model name|^CPU\(s\)" > "$OUT/cpu.txt" 2>&1
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    full-exit) ab_round "$1" "$2" CUPROBE_QUICK_EXIT=0 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 200 defaults full-exit
ab_done
