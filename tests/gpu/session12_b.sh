#!/usr/bin/env bash
# Why the confirmation's re-runs of a sweep at K = 8 took 15.7 s with the host mostly idle (session 12, call 1:
# the re-runs narrowed to the flagged cases, 32 of them at once, median 6.1 of 16 cores busy). Times bare re-runs
# started together: processes that only create a CUDA context (1, 8, 32 at once); one K = 8 process's re-run
# narrowed to the unguarded variant and whole (1, 8, 32 at once); the whole 384-case grid in one re-run (1 and
# 4 at once: what one confirmation of a whole sweep would cost). Each with its wall and CPU seconds. About 3 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
step() {
  echo "== $* $(date -u +%T)"; t=$(date +%s.%N)
  timeout 200 python3 tests/gpu/bare_profile.py --timings-only --out "$OUT/work" "$@"
  python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/work"
}
step --context-only --counts 1,8,32
step --last 128 --slots 8 --variants unguarded --counts 1,1,8,32
step --last 128 --slots 8 --counts 1,8,32
step --last 128 --whole --counts 1,4
kill $sampler
echo "== done $(date -u +%T)"
