#!/usr/bin/env bash
# Session 11's second GPU call, after three changes: batches balanced by the probe's own record count, a sweep slot's
# XML of 4,000 records or more parsed in child processes (by records, not 16 MiB), the confirmation's re-runs at
# nice 10. The 384-case grid at K = 4, 8 and 16, cold and with spares ready, confirmation on; K = 8 and 16 with it
# off; the host's CPU sampled throughout (tests/gpu/cpu_sample.py), summarised per run.
# compute-sanitizer 2025.3.1.0 (the CUDA toolkit's), watchdog 30 s.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session11_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
bench() {  # bench LABEL K [ENV=VALUE ...] -- BENCH ARGS
  local label=$1 k=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $label $(date -u +%T)"
  local t=$(date +%s.%N)
  env CUPROBE_GPU_SLOTS="$k" "${envs[@]}" timeout 200 python3 bench/sweep.py --skip-compare --full --slots "$k" \
    --out "$OUT/bench" "$@" > "$OUT/$label.txt" 2> "$OUT/$label.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^host\|^sweep processes\|^$" "$OUT/$label.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
bench k4 4 --
bench k8 8 --
bench k16 16 --
bench k8-confirm-off 8 CUPROBE_CONFIRM=0 -- --no-warm
bench k16-confirm-off 16 CUPROBE_CONFIRM=0 -- --no-warm
kill $sampler
cat "$OUT"/*.err > "$OUT/progress.err"
echo "== done $(date -u +%T)"
