#!/usr/bin/env bash
# Next: why a ready re-run runs each case about three times slower than a cold one (docs/sweep.md, "Session 23":
# the median of the per-re-run medians 1.0-1.2 ms against 0.3-0.5 ms; not the order its context was made in once
# made after the spares, not when its cases run). Rounds of the 384-case grid at K = 8 with spares ready, the ready
# re-runs (the default) against cold ones (--no-warm-reruns), alternating, until AB_DEADLINE_S (default 240); each
# round's re-run results (result.json: each case's seconds, the context's cuda_schedule, the warm-up's ready_after_s
# and waited_s) kept in $OUT/reruns.tgz, and the re-run lines now say how each waited for the GPU ("schedule ...")
# and the medians of the first and second halves of its cases.
# Predicted: both `spin` (auto, with one context in a process on a 16-core host), so not the flag; the ready ones'
# cases slower in both halves (it is the process, not a slow start); if instead a ready one says `yield` or
# `blocking`, that is the cause (the driver decided its wait when its context was made, beside fewer or more others).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session24_a.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  local flag=()
  [ "$2" = cold ] && flag=(--no-warm-reruns)
  ab_round "$1" "$2" -- "${flag[@]}"
  mkdir -p "/tmp/reruns/$1-$2"
  (cd /tmp && find cuprobe-sweep-bench-* -path '*/confirm*/*/result.json' -print0 | xargs -0 -r cp --parents -t "/tmp/reruns/$1-$2")
  rm -rf /tmp/cuprobe-sweep-bench-*
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 240 defaults cold
tar -C /tmp -czf "$OUT/reruns.tgz" reruns
ab_done
