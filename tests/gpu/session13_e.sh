#!/usr/bin/env bash
# The demangler on and off through cuprobe's own path (bench/sweep.py, the 384-case grid), after session13_d.sh's
# first bench ran on a box still warming up: K = 1 (one process, cold), then K = 4 and 8 (cold and with spares),
# each with CUPROBE_SKIP_DEMANGLING=0 (the demangler on, as before) and unset (off, the new default), alternating.
# Predicted (session 13): K = 1 about 25 % faster with the demangler off (one record-heavy process: 8.6 s -> 6.5 s
# in record_options.py); K = 4 10-25 % faster; K = 8 within the run-to-run spread (the host's cores are the limit).
# About 6 minutes. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
bench() {
  local name=$1; shift
  echo "== $name: bench/sweep.py $* $(date -u +%T)"; t=$(date +%s.%N)
  timeout 300 python3 bench/sweep.py "$@" --out "$OUT/bench" > "$OUT/$name.txt" 2> "$OUT/bench.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/$name.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
CUPROBE_SKIP_DEMANGLING=0 bench k1-on --skip-compare --full --slots 1 --no-warm
bench k1-off --skip-compare --full --slots 1 --no-warm
bench k48-off --skip-compare --full --slots 4,8
CUPROBE_SKIP_DEMANGLING=0 bench k48-on --skip-compare --full --slots 4,8
kill $sampler
echo "== done $(date -u +%T)"
