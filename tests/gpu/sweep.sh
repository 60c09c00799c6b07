#!/usr/bin/env bash
# The sweep on the H200: bench/sweep.py — the full 384-case narrow-matmul initcheck grid batched (wall time,
# cases per GPU-hour, its HTML report), then 48 cases batched vs one process per case (identical findings,
# both wall times, ratio). Everything under $OUT. Predicted about 8-9 minutes in all (docs/sweep.md).
# Run from the project root: bash tests/gpu/sweep.sh
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
