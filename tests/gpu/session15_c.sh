#!/usr/bin/env bash
# The commit that makes sanitizer runs and the confirmation's re-runs wait for the GPU blocking
# (Settings.cuda_schedule), on the H200: the core's GPU tests; what flag a sanitizer run and a bare run recorded;
# `cuprobe sweep run` of the 384-case grid twice; then bench/sweep.py --full --slots 8,12,16 --no-cold with the
# default (blocking), with CUPROBE_CUDA_SCHEDULE=auto, and the default again. Predicted: core tests pass; the
# sanitizer run records blocking and the bare run auto; 124 findings all benign; K = 8 as fast either way (call 2),
# and K = 12 and 16 no faster than K = 8 even with the cores the spinning freed, if the GPU shared by the processes
# and not the host's cores is what limits them. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session15_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
echo "== core.sh rc=$? ($(( $(date +%s) - began )) s)"; grep -E "passed|failed|error" "$OUT/core.log" | tail -3
for tool in initcheck none; do
  python3 -m cuprobe.service.cli run uninit-read --tool $tool --json > /tmp/flag-$tool.json 2>/dev/null
  echo "uninit-read --tool $tool: exit=$? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("outcome", r["outcome"], "cuda_schedule", r["probe_context"].get("cuda_schedule"))' /tmp/flag-$tool.json)"
done
export CUPROBE_DATA_DIR=/tmp/s15c-data; rm -rf "$CUPROBE_DATA_DIR"
cat > /tmp/grid384.toml <<'TOML'
name = "grid384"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = { m = 32, k = 32, tile = 32 }
grid = { n = { first = 1, last = 128 }, variants = ["unguarded", "guarded", "torch"] }
TOML
for r in 1 2; do
  t=$(date +%s.%N)
  python3 -m cuprobe.service.cli sweep run /tmp/grid384.toml > "/tmp/sweep-$r.md" 2> /dev/null
  echo "== cuprobe sweep run grid384, run $r: exit=$? wall=$(python3 -c "import time; print(round(time.time() - $t, 1))") s"
  sed -n 3,6p "/tmp/sweep-$r.md"
done
id=$(python3 -m cuprobe.service.cli sweep show | head -1 | cut -d' ' -f1)
python3 -m cuprobe.service.cli sweep show "$id" --json | python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
c = collections.Counter(str(f.get("confirmation")) for case in s["cases"] for f in case["findings"])
print("cases", len(s["cases"]), "processes", len(s["processes"]), "wall_s", s["wall_s"], "confirmations", dict(c))'
unset CUPROBE_DATA_DIR
python3 tests/gpu/cpu_sample.py /tmp/cpu.tsv --interval 0.5 & sampler=$!
for v in blocking auto blocking; do
  [ $(( $(date +%s) - began )) -gt 400 ] && break
  t=$(date +%s.%N)
  CUPROBE_CUDA_SCHEDULE=$v timeout 150 python3 bench/sweep.py --skip-compare --full --slots 8,12,16 --no-cold \
    --out /tmp/bench > "/tmp/bench-$v.txt" 2>/dev/null
  echo "== bench K = 8, 12, 16 with $v: rc=$?"
  grep -E "^ +[0-9]+ +ready|slowest process|re-runs" "/tmp/bench-$v.txt" | sed 's/^ *//' | cut -c1-160
  python3 tests/gpu/cpu_sample.py --summary /tmp/cpu.tsv --from "$t" --to "$(date +%s.%N)" | head -1 | cut -c1-120
  rm -rf /tmp/bench
done
kill $sampler
echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
