#!/usr/bin/env bash
# The spread of the 384-case grid at K = 8 with the shared confirmation (session 12: 9.4 s cold, 8.1 s with spares
# in call 3), two more runs; then the GPU test suite (tests/gpu/core.sh: pytest tests/gpu and the CLI on
# uninit-read), after narrow-matmul's inputs came to be drawn per case. About 8 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30
for r in 1 2; do
  echo "== 384 cases, K = 8, run $r $(date -u +%T)"
  CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer timeout 150 python3 bench/sweep.py --skip-compare \
    --full --slots 8 --out "$OUT/bench" > "$OUT/k8-run$r.txt" 2>/dev/null
  echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/k8-run$r.txt"; rm -rf "$OUT/bench"
done
echo "== core.sh $(date -u +%T)"
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
grep -E "passed|failed|error|^== |exit=|FAILED|ERROR" "$OUT/core.log" | tail -40
echo "== done $(date -u +%T)"
