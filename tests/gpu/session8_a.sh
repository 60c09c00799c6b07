#!/usr/bin/env bash
# Session 8, first GPU call: (1) replay's digest overhead on the example transformer step (bench/replay.py, three
# runs back to back: the box's speed moves between runs, the ratio within a run is the measurement); (2) where
# initcheck's per-record cost goes (tests/gpu/record_cost.py, --show-backtrace device vs no, one process and K = 4),
# with the toolkit's compute-sanitizer (2025.3, no stall at K > 1).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
OLD=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) $OLD: $("$OLD" --version | tail -1)"
for i in 1 2 3; do
  echo "== replay overhead, run $i $(date -u +%T)"
  timeout 120 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead-$i.txt" 2>&1
  echo "rc=$?"; cat "$OUT/replay-overhead-$i.txt"
done
echo "== record cost (2025.3) $(date -u +%T)"
CUPROBE_SANITIZER_PATH=$OLD timeout 300 python3 tests/gpu/record_cost.py --rounds 2 --k 4 > "$OUT/record-cost.txt" 2>&1
echo "rc=$?"; cat "$OUT/record-cost.txt"
echo "== done $(date -u +%T)"
