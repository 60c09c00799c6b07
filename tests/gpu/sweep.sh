#!/usr/bin/env bash
# Issue 6 on the H200: bench/sweep.py (48 cases batched vs one process per case, then the full 384-case
# narrow-matmul grid batched), writing the log, the HTML report and the Markdown summary under $OUT.
# Run from the project root: source .device/setup.sh && bash tests/gpu/sweep.sh   (about 7-8 minutes)
set -uo pipefail
OUT=${OUT:-build/gpu-sweep}
mkdir -p "$OUT"
log="$OUT/sweep.log"
{
  echo "== versions"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version
  python3 -m service.cli doctor 2>&1 | tail -20; echo "doctor rc=$?"
} >"$log" 2>&1
echo "== bench/sweep.py --full" | tee -a "$log"
PYTHONUNBUFFERED=1 timeout 450 python3 bench/sweep.py --full --out "$OUT" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
echo "bench/sweep.py rc=$rc" | tee -a "$log"
echo "== table"; grep -E "^(run|batched|per-case|ratio|per-case findings|full grid|  DIFFERS)" "$log"
ls -la "$OUT"
exit "$rc"
