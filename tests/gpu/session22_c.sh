#!/usr/bin/env bash
# Session 22, after session22_b.sh (docs/evidence/2026-12-05-s22/call6): warm re-runs handed their parameters at the
# sweep's start were slower than cold ones (their cases took 1.0-2.2 s beside the sanitizer processes' first cases,
# against 0.2-0.4 s when they began after their own 1.2 s start-up). This holds the warm ones back as long as a cold
# start takes (CUPROBE_BENCH_RERUNS_AFTER_S=1.2) against the defaults, alternating, until AB_DEADLINE_S (default 240).
# Predicted: if what the defaults lose to the re-runs is their start-up (interpreters, imports, contexts beside the
# sanitizer processes), the held-back warm ones are faster than the defaults (about 150,000 against 145,000 cases per
# GPU-hour); if it is the re-runs' GPU work itself, the two are alike.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session22_c.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
for round in 1 2 3 4 5 6 7 8 9 10 11 12; do
  order="defaults held"; [ $((round % 2)) = 0 ] && order="held defaults"  # round 1 compiles the kernels
  for setting in $order; do
    [ $(( $(date +%s) - began )) -gt ${AB_DEADLINE_S:-240} ] && break 2
    flag=(); after=0; [ $setting = held ] && { flag=(--warm-reruns); after=1.2; }
    ab_round $round $setting CUPROBE_BENCH_RERUNS_AFTER_S=$after -- "${flag[@]}"
  done
done
ab_done
