#!/usr/bin/env bash
# Session 28, call 3: the quick exit as the default, on both sanitizers.
# Call 2 (session28_b.sh, an H100, compute-sanitizer 2025.3.1.0): a sanitizer process's exit after its result took
# 0.91-0.99 s alone and 0.97-1.17 s (medians) at K = 8; the harness's --quick-exit cut it to 0.75-0.85 s alone and
# 0.52-0.58 s at K = 8, with the same 17,408 records, findings and ERROR SUMMARY, and the 384-case grid's median rose
# from 155,480 to 169,320 cases per GPU-hour. Settings.quick_exit is now on by default (probes that run their cases in
# their own process, options that want nothing reported at teardown).
# 1. tests/gpu/core.sh: the gpu-marked tests on both sanitizers (with the new one: quick against full exit on
#    uninit-read under initcheck and memcheck and on narrow-matmul with torch) and the CLI on uninit-read.
# 2. tests/gpu/record_options.py --set exit under compute-sanitizer 2026.4, two rounds.
# 3. The 384-case grid at K = 8 with spares ready: the defaults (quick exit) against CUPROBE_QUICK_EXIT=0, rotating,
#    until AB_DEADLINE_S (default 170).
# Predicted (written before this call): every gpu test passes on both sanitizers; under 2026.4 the same records and
# findings with and without --quick-exit, its exit 0.1-0.2 s shorter alone; at K = 8 the defaults' exit medians
# 0.5-0.6 s against 1.0-1.2 s with CUPROBE_QUICK_EXIT=0, and the defaults ahead in most rounds.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session28_c.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH CUPROBE_STALL_S; OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1)
echo "core rc=$?"; grep -E "passed|failed|^exit=|json exit=" "$OUT/core.log" | tail -12
CUPROBE_SANITIZER_PATH=/tmp/site/nvidia/cu13/bin/compute-sanitizer python3 tests/gpu/record_options.py --set exit \
  --rounds 2 > "$OUT/record_options_2026.txt" 2>&1
echo "record_options (2026.4) rc=$?"; tail -4 "$OUT/record_options_2026.txt"
ab_setting() {
  case $2 in
    defaults) ab_round "$1" "$2" ;;
    full-exit) ab_round "$1" "$2" CUPROBE_QUICK_EXIT=0 ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 170 defaults full-exit
ab_done
