#!/usr/bin/env bash
# Which of a confirmation re-run's 384 cases holds the 2-3 s that session 16_a's split found in one case of each
# re-run (the re-runs spent 1.0-1.6 s before their first case and 2.7-4.3 s in their cases, 1.7-3.1 s of it in the
# slowest one). Predicted: case #0, the first kernel launch of the process (lazy module load, first allocation),
# so the cost is start-up that lands in the first case, not in the grid's cases. Three rounds at the defaults.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session18_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
for round in 1 2 3; do
  timeout 90 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold --out /tmp/bench > /tmp/bench.txt 2>/dev/null
  echo "round $round rc=$? wall,cases/h: $(grep -E "^ +8 +ready" /tmp/bench.txt | awk '{print $5, $6}')"
  grep -E "re-runs" /tmp/bench.txt | sed 's/^ *//; s/; /\n  /g'
  rm -rf /tmp/bench
done
