#!/usr/bin/env bash
# Ran at 6ba6d9d (docs/evidence/2026-12-05-s23/call1), where bench/sweep.py read CUPROBE_BENCH_RERUNS_LAST; it now reads
# CUPROBE_BENCH_RERUNS_ORDER (after = what `last` measured) and makes ready re-runs by default (tests/gpu/session23_b.sh).
# Next: why a re-run process made before the sweep ran its cases about four times slower than one made during it
# (docs/sweep.md, "Session 22"). Three settings on the 384-case grid at K = 8 with spares ready, rotating which goes
# first, until AB_DEADLINE_S (default 300):
#   defaults                        the cold shared re-runs, as today;
#   blocking   CUPROBE_CUDA_SCHEDULE=blocking for every process, re-runs ready (--warm-reruns): if the slowdown is the
#              driver's spin-or-yield choice under `auto` (made when each context is made), this removes it;
#   last       re-runs ready, made after the eight spares' contexts (CUPROBE_BENCH_RERUNS_LAST=1): if it is the order
#              the contexts were made in, this removes it.
# Predicted (a guess between the two explanations): `blocking` and `last` each within 5 % of the defaults' median
# if its explanation is right, about 10 % below it (as session 22's ready re-runs) if not; per-case medians of the
# re-runs (the "re-runs, s before the first case" lines) 0.2-0.4 ms where the explanation is right.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session23_a.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
settings=(defaults blocking last)
for round in 1 2 3 4 5 6 7 8 9 10; do
  for i in 0 1 2; do
    setting=${settings[$(( (i + round) % 3 ))]}
    [ $(( $(date +%s) - began )) -gt ${AB_DEADLINE_S:-300} ] && break 2
    flag=(--warm-reruns); schedule=auto; last=0
    case $setting in defaults) flag=();; blocking) schedule=blocking;; last) last=1;; esac
    ab_round $round $setting CUPROBE_CUDA_SCHEDULE=$schedule CUPROBE_BENCH_RERUNS_LAST=$last -- "${flag[@]}"
  done
done
ab_done
