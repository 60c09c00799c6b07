#!/usr/bin/env bash
# Next (written in session 27, not yet run): is the confirming sanitizer run's own option what costs its unguarded
# cases about a second at K = 8? Session 27 found, on H100s: the unguarded cases of a confirming sweep's slowest
# process 0.6-1.1 s slower than with the confirmation off, whether the four re-runs ran their cases beside them (the
# defaults) or were held idle until every batch had run (call 2); four idle ready re-run processes beside a sweep
# with the confirmation off cost nothing (call 4: medians 188,692 against 185,566 cases per GPU-hour); and the
# control's `--kernel-name-exclude kns=cuprobe_hidden_write` cost nothing in one record-heavy process alone (call 3,
# record_options.py --set control: 0.98x). Left: that option at K = 8, or the probe's `--confirm-control`.
# The 384-case grid at K = 8 with spares ready: the confirmation off; off with the control's exclude filter on every
# process (CUPROBE_BENCH_OPTIONS); the defaults; rotating who goes first, until AB_DEADLINE_S (default 270).
# Predicted: off with the filter within 5 % of off (the filter is matched per launch); the defaults 15-30 % below
# both. Where the filter is free, the confirming run's extra second is in neither its options nor the re-runs'
# presence, which leaves its control cases (`--confirm-control`) and the re-runs' own work to measure next.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session28_a.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
ab_setting() {
  case $2 in
    off) ab_round "$1" "$2" CUPROBE_CONFIRM=0 ;;
    off-filter) ab_round "$1" "$2" CUPROBE_CONFIRM=0 \
      'CUPROBE_BENCH_OPTIONS={ kernel_name_exclude = ["kns=cuprobe_hidden_write"] }' ;;
    defaults) ab_round "$1" "$2" ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 270 off off-filter defaults
ab_done
