#!/usr/bin/env bash
# Session 11's first GPU call: where the 384-case grid's time goes at K = 4 and 8, with the host's CPU sampled.
# (1) bench/slots_parse.py on the box's 16 cores (K parses at once: in one process's threads against children);
# (2) bench/sweep.py's 384-case grid at K = 4, cold and with spares ready, parsing in children and here;
# (3) the same grid at K = 4 and K = 8, cold, with confirmation on and off (CUPROBE_CONFIRM=0).
# Throughout, tests/gpu/cpu_sample.py samples the cores busy and the CPU seconds per command name; each run's
# window is summarised after it. compute-sanitizer 2025.3.1.0 (the CUDA toolkit's), watchdog 30 s.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session11_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
window() {  # window LABEL T0: the CPU summary from T0 to now
  echo "-- cpu, $1:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$2" --to "$(date +%s.%N)"
}
echo "== slots parse $(date -u +%T)"
t0=$(date +%s.%N)
timeout 120 python3 bench/slots_parse.py --slots 1,2,4,8 --repeat 3 > "$OUT/slots-parse.txt" 2>&1
echo "rc=$?"; cat "$OUT/slots-parse.txt"; window "slots parse" "$t0"
bench() {  # bench LABEL K [ENV=VALUE ...] -- BENCH ARGS
  local label=$1 k=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $label $(date -u +%T)"
  local t=$(date +%s.%N)
  env CUPROBE_GPU_SLOTS="$k" "${envs[@]}" timeout 240 python3 bench/sweep.py --skip-compare --full --slots "$k" \
    --out "$OUT/bench" "$@" > "$OUT/$label.txt" 2> "$OUT/$label.err"
  echo "rc=$?"; grep -v "^report\|^no report" "$OUT/$label.txt"; window "$label" "$t"
  rm -rf "$OUT/bench"
}
bench k4-parse 4 -- --compare-parse
bench k4-confirm-off 4 CUPROBE_CONFIRM=0 -- --no-warm
bench k8-confirm-on 8 -- --no-warm
bench k8-confirm-off 8 CUPROBE_CONFIRM=0 -- --no-warm
kill $sampler
echo "== done $(date -u +%T)"
