#!/usr/bin/env bash
# Session 23, third call: more rounds of the ready re-runs made after the spares (bench/sweep.py's default) against
# the cold re-runs, whose difference call1 (159,345 against 129,313) and call2 (149,650 against 148,134) did not agree
# on, and a third setting that tests why the ready re-runs' cases are slower than a cold re-run's (median 0.9-1.7 ms
# against 0.2-0.4 ms): they begin at once, while the eight sanitizer processes begin theirs, where the cold ones begin
# about 1.2 s later. The 384-case grid at K = 8 with spares ready, rotating which goes first, until AB_DEADLINE_S
# (default 450):
#   defaults   re-runs ready, made after the spares, handed their parameters at once;
#   cold       --no-warm-reruns: the shared re-runs start cold during the sweep;
#   held       re-runs ready, made after the spares, handed their parameters 1.2 s after the sweep began
#              (CUPROBE_BENCH_RERUNS_AFTER_S=1.2, as long as a cold one takes to reach its first case).
# Predicted: `defaults` and `cold` within 5 % of each other (call2), both medians 140,000-155,000; `held`: its re-runs'
# per-case medians 0.2-0.5 ms (as cold ones) if it is when they run, and its median within 5 % of `defaults`.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session23_c.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  local flag=() after=0
  case $2 in cold) flag=(--no-warm-reruns);; held) after=1.2;; esac
  ab_round "$1" "$2" CUPROBE_BENCH_RERUNS_AFTER_S=$after -- "${flag[@]}"
}
ab_rounds 450 defaults cold held
ab_done
