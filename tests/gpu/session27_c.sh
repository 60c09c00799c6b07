#!/usr/bin/env bash
# Session 27, call 3: why a confirming sweep's sanitizer processes are slower in their own unguarded cases.
# Call 1 (session26_b.sh) and call 2 (session27_a.sh) on H100s: with the confirmation on, the slowest process spent
# about 1 s more in its unguarded cases than with it off, and holding the four ready re-runs until every batch had
# run (so that none of their cases ran beside the batches) did not change that (call 2: unguarded 5.6-6.0 s held,
# 4.8-6.0 s at the defaults). What else a confirming sweep has: (a) the four ready re-run processes, each with a
# CUDA context on the GPU, alive beside the batches (held: all the sweep long); (b) in each sanitizer command
# `--kernel-name-exclude kns=cuprobe_hidden_write` for the confirmer's planted blind-spot case; (c) the probe's
# `--confirm-control`, whose cases run after the probe's own.
# 1. tests/gpu/record_options.py --set control: one record-heavy process straight under the sanitizer, with and
#    without (b), three rounds.
# 2. The 384-case grid at K = 8 with spares ready: the confirmation off; off with four re-run processes made and
#    ready as a confirming sweep makes them and never given anything (CUPROBE_BENCH_IDLE_RERUNS=1: (a) alone); the
#    defaults; rotating who goes first, until AB_DEADLINE_S (default 200).
# Predicted (written before this call): (b) costs under 3 % (a filter is matched per launch, not per record); (a)
# idle contexts cost nothing measurable (off-idle within 5 % of off), so the unguarded cases' extra second stays
# unexplained by (a) and (b) and points at (c) or at the re-runs' own GPU work in the defaults.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session27_c.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
python3 tests/gpu/record_options.py --set control --rounds 3 > "$OUT/record_options.txt" 2>&1
echo "record_options rc=$?"; tail -4 "$OUT/record_options.txt"
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
    off-idle) ab_round "$1" "$2" CUPROBE_CONFIRM=0 CUPROBE_BENCH_IDLE_RERUNS=1 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 200 off off-idle defaults
ab_done
