#!/usr/bin/env bash
# Session 28, call 5: `cuprobe sweep run`'s path (the 384-case grid at K = 8, cold: no spares, no re-runs made before
# the clock) with the quick exit (the default) and without (CUPROBE_QUICK_EXIT=0), rotating who goes first, until
# AB_DEADLINE_S (default 170). The H200 ran this path at 129,072 cases per GPU-hour in session 25 (before the exit).
# Predicted (written before this call): on an H100, cold 1.5-2.5 s slower than the ready rows of calls 2-4 (8.5-10 s,
# 140,000-165,000 cases per GPU-hour with the quick exit), the quick exit ahead in most rounds by about half a second.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session28_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
echo "== $(date -u +%T) start"
cold_round() {  # cold_round ROUND SETTING [NAME=VALUE ...]
  local round=$1 setting=$2; shift 2
  env "$@" timeout 90 python3 bench/sweep.py --skip-compare --full --slots 8 --no-warm --out /tmp/bench \
    > /tmp/bench.txt 2>&1
  local rc=$?
  { echo "=== round $round $setting rc=$rc"; cat /tmp/bench.txt; } >> "$OUT/cold.log"
  echo "round $round $setting rc=$rc wall,cases/h: $(grep -E '^ +8 +none' /tmp/bench.txt | awk '{print $5, $6}')"
  grep -E "the exit|NOT RUN|confirmations" /tmp/bench.txt | sed 's/^ *//' | cut -c1-300
  rm -rf /tmp/bench
}
for round in $(seq 1 20); do
  for setting in $( ((round % 2)) && echo "defaults full-exit" || echo "full-exit defaults"); do
    [ $(( $(date +%s) - began )) -gt "${AB_DEADLINE_S:-170}" ] && break 2
    case $setting in
      defaults) cold_round "$round" defaults ;;
      full-exit) cold_round "$round" full-exit CUPROBE_QUICK_EXIT=0 ;;
    esac
  done
done
echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
