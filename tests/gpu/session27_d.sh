#!/usr/bin/env bash
# Session 27, call 4: do four idle ready re-run processes (each with its CUDA context, never given anything) slow a
# sweep? Call 3 (session27_c.sh) ran too few rounds to say (off-idle 250,721 / 216,135 / 199,863 against off
# 284,840 / 181,875 cases per GPU-hour) and found the control's kernel filter free (0.98x). The 384-case grid at
# K = 8 with spares ready, the confirmation off with and without the idle processes (CUPROBE_BENCH_IDLE_RERUNS=1),
# rotating who goes first, until AB_DEADLINE_S (default 210).
# Predicted (written before this call): off-idle within 5 % of off (an idle context is not scheduled); if so, what
# the confirmation costs a sweep is the re-runs' work or the confirming run's own (its control cases), not their
# presence.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session27_d.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  case $2 in
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
    off-idle) ab_round "$1" "$2" CUPROBE_CONFIRM=0 CUPROBE_BENCH_IDLE_RERUNS=1 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 210 off off-idle
ab_done
