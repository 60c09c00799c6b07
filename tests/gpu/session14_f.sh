#!/usr/bin/env bash
# Where between K = 4 and K = 8 the 384-case grid is fastest on the H200's 16 cores, with the final commit's path:
# bench/sweep.py --full --slots 4,6,8, cold and with spares ready, twice. Session 13 measured K = 4 as fast as K = 8
# with the demangler off (10.3 against 10.6 s with spares ready), though each process keeps about 1.9 cores busy
# (4 processes leave half the cores idle). Predicted: K = 6 9.5-10 s with spares ready, K = 4 and K = 8 10-10.5 s;
# per-case findings the same in every row. About 4 minutes. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session14_f.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for r in 1 2; do
  echo "== K = 4, 6, 8, round $r $(date -u +%T)"; t=$(date +%s.%N)
  timeout 280 python3 bench/sweep.py --skip-compare --full --slots 4,6,8 --out "$OUT/bench" > "$OUT/round$r.txt" 2>/dev/null
  echo "rc=$?"; grep -E "^  [0-9] |slowest process|confirmations" "$OUT/round$r.txt"; rm -rf "$OUT/bench"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
done
kill $sampler
echo "== done $(date -u +%T)"
