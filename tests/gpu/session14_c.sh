#!/usr/bin/env bash
# Parse children forked from one server that imported the parser when the sweep started (service/sanitizer/forked.py,
# CUPROBE_FORK_PARSERS) against children started after each run, importing it each, as before: bench/sweep.py on the
# 384-case grid at K = 8, cold and with spares ready, alternating off / on three times. Predicted (after call 2, where
# eight children started ahead took their imports' CPU from the runs and the sweep was no faster): the slowest
# process's parse stage from 0.7-1.0 s to 0.2-0.3 s (on the 2-core development machine a 6,624-record file took
# 0.61-0.82 s started, 0.24-0.31 s forked), one import's CPU instead of eight, the wall 0.4-0.6 s shorter: about 5 %
# more cases per GPU-hour with spares ready. About 5 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session14_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime; "$CUPROBE_SANITIZER_PATH" --version | tail -1
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
B="$OUT/benches"; mkdir -p "$B"
python3 tests/gpu/cpu_sample.py "$B/cpu.tsv" --interval 0.5 & sampler=$!
bench() {  # bench NAME WARM(0|1)
  local name=$1 warm=$2
  echo "== $name (CUPROBE_FORK_PARSERS=$warm) $(date -u +%T)"; t=$(date +%s.%N)
  CUPROBE_FORK_PARSERS=$warm timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 \
    --out "$OUT/bench" > "$B/$name.txt" 2> "$B/$name.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$B/$name.txt"; tail -2 "$B/$name.err"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$B/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
for r in 1 2 3; do
  bench "started-$r" 0
  bench "forked-$r" 1
done
kill $sampler
tar czf "$OUT/benches.tgz" -C "$OUT" benches && rm -rf "$B"
echo "== done $(date -u +%T)"
