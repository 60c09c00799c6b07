#!/usr/bin/env bash
# The CUDA scheduling flag's read-back (now taken while the probe's context is held) and where the confirmation's
# re-runs spend their time, on the H200: the core's GPU tests; the flag a sanitizer run and a bare run record with
# CUPROBE_CUDA_SCHEDULE=blocking; then bench/sweep.py --full --slots 8 --no-cold, rounds alternating the defaults
# and the confirmation off, each 384-case row followed by every re-run's split (before its first case, in the grid's
# cases, in the control cases). Predicted: core tests pass; the sanitizer run records blocking and the bare run
# auto; each re-run spends under 3 s before its first case and most of the rest in its 384 cases (a few ms each,
# slowed by the GPU the sanitizer runs share), so a re-run's cases and not its start-up hold the ~1.8 s the
# confirmation costs. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session16_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
git log --oneline -1 > "$OUT/commit.txt" 2>/dev/null
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
echo "== core.sh rc=$? ($(( $(date +%s) - began )) s)"; grep -E "passed|failed|error" "$OUT/core.log" | tail -3
for tool in initcheck none; do
  CUPROBE_CUDA_SCHEDULE=blocking python3 -m cuprobe.service.cli run uninit-read --tool $tool --json > "/tmp/flag-$tool.json" 2>/dev/null
  echo "blocking, uninit-read --tool $tool: exit=$? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("outcome", r["outcome"], "cuda_schedule", r["probe_context"].get("cuda_schedule"))' "/tmp/flag-$tool.json")"
done
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for round in 1 2 3 4 5 6; do
  for setting in default off; do
    [ $(( $(date +%s) - began )) -gt 480 ] && break 2
    confirm=1; [ $setting = off ] && confirm=0
    t=$(date +%s.%N)
    CUPROBE_CONFIRM=$confirm timeout 90 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold \
      --out /tmp/bench > "/tmp/bench.txt" 2>/dev/null
    rc=$?
    row=$(grep -E "^ +8 +ready" /tmp/bench.txt | awk '{print $5, $6}')
    echo "round $round $setting rc=$rc wall,cases/h: $row"
    grep -E "slowest process|confirmations|re-runs" /tmp/bench.txt | sed 's/^ *//' | cut -c1-400
    python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)" | head -1 | cut -c1-120
    rm -rf /tmp/bench
  done
done
kill $sampler
echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
