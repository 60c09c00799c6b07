#!/usr/bin/env bash
# What "outside the cases" holds in a K = 8 sweep process (1.7-2.3 s with spares ready in calls 1, 5, 6): bench/sweep.py
# now also prints each process's seconds in the confirmer's planted control cases; the rest of "outside" is the
# time before the first case (printed) and the process's exit. The 384-case grid at K = 8, cold and with spares,
# twice. Predicted: the control cases 0.3-0.6 s a process, the exit about 1 s. About 3 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_g.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
for r in 1 2; do
  echo "== 384 cases, K = 8, run $r $(date -u +%T)"
  timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 --out "$OUT/bench" > "$OUT/k8-run$r.txt" 2>/dev/null
  echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/k8-run$r.txt"; rm -rf "$OUT/bench"
done
echo "== done $(date -u +%T)"
