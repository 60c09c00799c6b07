#!/usr/bin/env bash
# Session 28, call 2: what a sanitizer process's exit costs, and whether skipping its teardown takes it back.
# Call 1 (session28_a.sh) on an H100: the control's kernel filter costs nothing at K = 8 (medians 167,182 with it,
# 167,618 without, the confirmation off); the defaults 151,182. In every round the slowest process spent 1.3-2.0 s of
# its run stage outside its cases, only 0.06-0.08 s of it before the first case, so most of it after the last: the
# harness's exit (Python's finalizers: torch's, pycuda's context pop), the CUDA contexts' teardown under the
# sanitizer, and the sanitizer's own wrap-up. Settings.quick_exit (CUPROBE_QUICK_EXIT=1, new, off by default) ends
# the harness with os._exit once its result is written and its output flushed.
# 1. tests/gpu/record_options.py --set exit: one record-heavy process straight under the sanitizer, with and without
#    the harness's --quick-exit, three rounds: wall, CPU, the exit (the result's write to the XML's last), records,
#    findings, the sanitizer's ERROR SUMMARY line.
# 2. The 384-case grid at K = 8 with spares ready: the defaults against the defaults with CUPROBE_QUICK_EXIT=1,
#    rotating who goes first, until AB_DEADLINE_S (default 240); each round prints the exit per process.
# Predicted (written before this call): alone, the exit after the result 0.3-0.6 s, with --quick-exit under 0.15 s,
# the same records and findings and an ERROR SUMMARY line still printed. At K = 8 the exit's median 0.8-1.3 s, with
# --quick-exit 0.1-0.4 s, and the sweep 8-15 % more cases per GPU-hour, every finding benign, every control right.
# What could make it wrong: the sanitizer might need the target's teardown to write its last records or its summary
# (then the findings or the outcome differ, which both parts check), or the time may be the sanitizer front end
# catching up on records, which no target-side change shortens (then the exit stays as long).
# Since 6f641b3 the quick exit is the default, so its two settings are the same: session28_c.sh compares them now.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session28_b.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
lscpu | grep -E "Model name|^CPU\(s\)|MHz" >> "$OUT/cpu.txt" 2>&1
python3 tests/gpu/record_options.py --set exit --rounds 3 > "$OUT/record_options.txt" 2>&1
echo "record_options rc=$?"; tail -4 "$OUT/record_options.txt"
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    quick) ab_round "$1" "$2" CUPROBE_QUICK_EXIT=1 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 240 defaults quick
ab_done
