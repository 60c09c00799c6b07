#!/usr/bin/env bash
# Session 27, call 3: the hold on the path `cuprobe sweep run` takes, where nothing is ready before the sweep: the
# 384-case grid at K = 8 without spares (bench/sweep.py's `none` rows), the defaults (four cold re-runs started
# beside the batches, running their cases beside them) against the hold (CUPROBE_CONFIRM_HOLD=1: the sweep starts
# four re-run processes of its own as it begins, which get ready and wait until every batch has run) and the
# confirmation off, rotating who goes first, until AB_DEADLINE_S (default 240).
# Predicted (written before this call, before call 2's result): the re-runs' start-up still lands beside the
# batches' own, so the hold gains less here than with a pool made before the clock: its median 0-8 % above the
# defaults', the confirmation off 15-30 % above the defaults'. Every round's findings benign (or none where off), the
# controls right, `held until the grid had run in 8` on every hold row, no NOT RUN line.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session27_b.sh
export AB_SPARES=none
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    hold) ab_round "$1" "$2" CUPROBE_CONFIRM_HOLD=1 ;;
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 240 defaults hold off
ab_done
