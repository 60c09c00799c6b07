#!/usr/bin/env bash
# The final commit's sweep path on the H200, after the fork server's listening socket moved to the server alone:
# `cuprobe sweep run` of the 384-case grid twice (the first compiles the kernels), then bench/sweep.py at K = 8 once.
# Predicted: 124 findings all benign each time, the second sweep exit 0 with no parser server left; the bench's
# slowest parse stage 0.2-0.3 s. About 2 minutes. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session14_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
export CUPROBE_DATA_DIR=/tmp/s14e-data
rm -rf "$CUPROBE_DATA_DIR"
cat > /tmp/grid384.toml <<'TOML'
name = "grid384"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = { m = 32, k = 32, tile = 32 }
grid = { n = { first = 1, last = 128 }, variants = ["unguarded", "guarded", "torch"] }
TOML
for r in 1 2; do
  echo "== cuprobe sweep run grid384, run $r $(date -u +%T)"
  t=$(date +%s.%N)
  python3 -m cuprobe.service.cli sweep run /tmp/grid384.toml > "$OUT/sweep-$r.md" 2> /dev/null
  echo "exit=$? wall=$(python3 -c "import time; print(round(time.time() - $t, 1))") s"; sed -n 3,8p "$OUT/sweep-$r.md"
  sleep 1; echo "parser servers left after the sweep: $(ps -eo args | grep -c '[s]ervice.sanitizer.forked')"
done
id=$(python3 -m cuprobe.service.cli sweep show | head -1 | cut -d' ' -f1)
python3 -m cuprobe.service.cli sweep show "$id" --json | python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
c = collections.Counter(str(f.get("confirmation")) for case in s["cases"] for f in case["findings"])
print("cases", len(s["cases"]), "processes", len(s["processes"]), "wall_s", s["wall_s"], "confirmations", dict(c))'
echo "== bench/sweep.py K = 8 $(date -u +%T)"
timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 --out "$OUT/bench" > "$OUT/bench.txt" 2>/dev/null
echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/bench.txt"; rm -rf "$OUT/bench"
echo "== done $(date -u +%T)"
