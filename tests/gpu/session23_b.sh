#!/usr/bin/env bash
# Session 23, second call: the ready re-runs made once the spares are ready, now bench/sweep.py's default for its rows
# with spares ready, against the re-runs started cold during the sweep (as before) and against re-runs made and ready
# before the spares start. The 384-case grid at K = 8 with spares ready, rotating which goes first, until
# AB_DEADLINE_S (default 480):
#   defaults   re-runs ready, made after the spares (what call1's `last` measured, now the default);
#   cold       --no-warm-reruns: the shared re-runs start cold during the sweep (call1's `defaults`);
#   before     CUPROBE_BENCH_RERUNS_ORDER=before: re-runs made and ready, then the spares started. If what made session
#              22's ready re-runs slow is that their contexts were made before the spares', this is as slow as they
#              were; if it is that they got ready while the spares started, it is as fast as `defaults`.
# Predicted (from call1: last 159,345, defaults 129,313; session 22: defaults 138,979-145,800): `defaults` median
# 150,000-165,000 with most rounds at or above 150,000; `cold` 128,000-146,000; `before` unknown either way: about
# 120,000-135,000 with per-case medians of 1.0-2.0 ms if the creation order matters, within 5 % of `defaults` if not.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session23_b.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  local flag=() order=after
  case $2 in cold) flag=(--no-warm-reruns);; before) order=before;; esac
  ab_round "$1" "$2" CUPROBE_BENCH_RERUNS_ORDER=$order -- "${flag[@]}"
}
ab_rounds 480 defaults cold before
ab_done
