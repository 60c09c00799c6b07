#!/usr/bin/env bash
# Session 22: the confirmation's four re-runs ready before the sweep (service/probing/warm_reruns.py), against the
# defaults, on the 384-case grid at K = 8 with spares ready (bench/sweep.py --full --slots 8 --no-cold), alternating
# (who goes first swapping each round) until AB_DEADLINE_S (default 330) after the script's start.
# Predicted: the defaults as in session 21 (H100: median about 143,000 cases per GPU-hour, mean wall about 9.6 s);
# with warm re-runs about 155,000 (wall about 8.9 s): the re-runs' start-up (1.1-1.7 s each, four at once, on the GPU
# the eight sanitizer processes share) moves before the clock, their work (about 1.5 s) stays; every finding benign,
# the control right, and the message saying "4 of them in processes ready before it".
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session22_b.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
for round in 1 2 3 4 5 6 7 8 9 10 11 12; do
  order="defaults warm"; [ $((round % 2)) = 0 ] && order="warm defaults"  # round 1 compiles the kernels
  for setting in $order; do
    [ $(( $(date +%s) - began )) -gt ${AB_DEADLINE_S:-330} ] && break 2
    flag=(); [ $setting = warm ] && flag=(--warm-reruns)
    ab_round $round $setting -- "${flag[@]}"
  done
done
ab_done
