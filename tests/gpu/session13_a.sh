#!/usr/bin/env bash
# Where a sweep process's run stage goes, case by case (each case's `seconds` and the setup before the first case,
# printed by bench/sweep.py under every 384-case row): (1) the 384-case grid at K = 8, confirmation on, cold and
# with spares ready; (2) the same with the confirmation off; (3) K = 1, one process for the whole grid, cold, the
# cases' cost with nothing beside them. CPU sampled throughout. Predicted (session 13): K = 8 ready 8-9.5 s, its
# slowest process's run stage about 7.5 s: torch cases about 2.5 s (the first, loading cuBLAS under the sanitizer,
# about 1.5 s of it), unguarded about 2.5 s, guarded about 0.8 s, outside the cases about 1.5 s. About 5 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime; git log --oneline -1 2>/dev/null
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
bench() {
  local name=$1; shift
  echo "== $name: bench/sweep.py $* $(date -u +%T)"; t=$(date +%s.%N)
  timeout 300 python3 bench/sweep.py "$@" --out "$OUT/bench" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/$name.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
bench k8 --skip-compare --full --slots 8
CUPROBE_CONFIRM=0 bench off8 --skip-compare --full --slots 8
bench k1 --skip-compare --full --slots 1 --no-warm
kill $sampler
echo "== done $(date -u +%T)"
