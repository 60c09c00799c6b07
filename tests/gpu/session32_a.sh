#!/usr/bin/env bash
# Session 32, call 1: the confirmation's four bare re-runs in fewer processes (CUPROBE_CONFIRM_PROCESSES). On the cold
# path (`cuprobe sweep run`'s: 384 cases at K = 8, nothing made before the clock) a sweep starts eight sanitizer
# processes and four re-run processes at once, and CUDA contexts created side by side wait on each other (sessions 12
# and 30: four processes making contexts halve a running sanitizer process's case rate for 1.1-1.5 s). With 2, each
# process runs two re-runs one after another (`python -m cuprobe.probes ... --then POISON=FILE`); with 1, all four.
# 1. tests/gpu/test_confirm_processes_gpu.py on the box's sanitizers: uninit-read and narrow-matmul (with torch's
#    cases in the early re-runs) confirmed at 4, 2 and 1 processes give the same verdicts and evidence; torch's
#    poisoning allocator takes each run's fill in one process.
# 2. The cold path at CUPROBE_CONFIRM_PROCESSES=4 (the default), 2 and 1, rotating who goes first, until AB_DEADLINE_S
#    (default 300).
# Predicted (written before this call): the tests pass on every sanitizer. Cold: every process's time before its
# first case 0.1-0.4 s shorter at 2 and 1 than at 4; the re-runs end before the slowest sanitizer process in every
# setting (at 1: their start about 1.5 s plus four times 0.2-0.6 s of cases); cases per GPU-hour, medians: 2 about
# 2-5 % above 4, 1 about 3-7 % above 4; ahead in most paired rounds. Every finding benign, every control right.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session32_a.sh
COLD_SHOW="slowest process|before the first case|re-runs took|NOT RUN"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH; timeout 220 python3 -m pytest tests/gpu/test_confirm_processes_gpu.py -m gpu -q \
  -p no:cacheprovider --timeout 200 -rA > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error" "$OUT/tests.log" | cut -c1-300 | tail -12
cold_setting() {
  case $2 in
    four) cold_round "$1" "$2" CUPROBE_CONFIRM_PROCESSES=4 ;;
    two) cold_round "$1" "$2" CUPROBE_CONFIRM_PROCESSES=2 ;;
    one) cold_round "$1" "$2" CUPROBE_CONFIRM_PROCESSES=1 ;;
  esac
}
cold_rounds 300 one four two  # round 1: four first
cold_done
