#!/usr/bin/env bash
# The sweep benchmark on a GPU machine: bench/sweep.py — the full 384-case narrow-matmul initcheck grid batched at
# K = 1, 2, 4, 8 and the host's default K (wall time, cases per GPU-hour, its HTML report), then the 48-case grid
# batched against one process per case (identical findings, both wall times, ratio). Everything under $OUT
# (default build/gpu-sweep): sweep.log and each run's report; each part is stopped after about five minutes.
# docs/sweep.md says what the rows mean; bench/README.md has the current figures.
# Run from the project root on the box set up as docs/gpu-box.md describes:  bash tests/gpu/sweep.sh
set -uo pipefail
OUT=${OUT:-build/gpu-sweep}
mkdir -p "$OUT/b48"
log="$OUT/sweep.log"
{
  echo "== versions"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version
  python3 -m cuprobe.service.cli doctor 2>&1 | tail -20
} >"$log" 2>&1
export PYTHONUNBUFFERED=1
echo "== full grid: bench/sweep.py --full --skip-compare" | tee -a "$log"
timeout 290 python3 bench/sweep.py --full --skip-compare --out "$OUT" 2>&1 | grep -v "^  nightly" | tee -a "$log"
echo "full grid rc=${PIPESTATUS[0]}" | tee -a "$log"
echo "== 48 cases: bench/sweep.py" | tee -a "$log"
timeout 280 python3 bench/sweep.py --out "$OUT/b48" 2>&1 | tee -a "$log"
echo "48-case rc=${PIPESTATUS[0]}" | tee -a "$log"
echo "== table"
grep -E "^(run |batched|per-case|ratio|full grid|  DIFFERS|.* rc=)" "$log"
ls -la "$OUT" "$OUT/b48"
