#!/usr/bin/env bash
# One set of the confirmation's re-runs for a sweep's batches of one grid (service/probing/confirm_shared.py), on the
# H200. (1) bench/sweep.py: the 48-case grid's baseline and K = 2, 4, 8, and the 384-case grid at the same K, the
# confirmation on (shared), cold and with spares ready; (2) the 384-case grid at K = 16, confirmation on;
# (3) the 384-case grid at K = 8 with the confirmation off, for comparison in the same call. CPU sampled throughout.
# Predicted (session 12): 384 cases at K = 8 10-11 s cold, 9-10 s with spares (125,000-150,000 cases per GPU-hour);
# K = 4 12-13 s; K = 16 no faster than K = 8 (the sanitizer processes are CPU-bound there); the 48-case ratio at
# K = 4 23-27x; the confirmation off at K = 8 8.7-9.5 s. Every finding of the unguarded kernel benign, the
# confirmer's control right in every process. About 7 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
bench() {
  local name=$1; shift
  echo "== $name: bench/sweep.py $* $(date -u +%T)"; t=$(date +%s.%N)
  timeout 420 python3 bench/sweep.py "$@" --out "$OUT/bench" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/$name.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
bench shared --full --slots 2,4,8
bench shared16 --skip-compare --full --slots 16
CUPROBE_CONFIRM=0 bench off8 --skip-compare --full --slots 8
kill $sampler
echo "== done $(date -u +%T)"
