#!/usr/bin/env bash
# The default path end to end on the H200: `cuprobe doctor` (the worker's K and a local sweep's), then
# `cuprobe sweep run` of the 384-case narrow-matmul grid twice at the default K (stored, diffed, shown), each run's
# wall time, exit code and the confirmations of its stored findings. Predicted: doctor says 4 for the worker and 8
# for a local sweep; each sweep 11-14 s wall (9.4-11.1 s in the bench at K = 8 cold, plus the CLI's start and the
# store); exit 1 (new findings) then 0 (persisting); 124 findings, all benign. About 2 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_f.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
export CUPROBE_DATA_DIR=/tmp/s12f-data; rm -rf "$CUPROBE_DATA_DIR"
python3 -m cuprobe.service.cli doctor 2>&1 | grep -E "GPU:|gpu0|sweep run here|compute-sanitizer:"
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
  python3 -m cuprobe.service.cli sweep run /tmp/grid384.toml --report "$OUT/report$r" > "$OUT/sweep$r.md" 2> "$OUT/sweep$r.err"
  rc=$?
  echo "exit=$rc wall=$(python3 -c "import time; print(round(time.time() - $t, 1))") s"
  head -12 "$OUT/sweep$r.md"
done
echo "== stored"
python3 -m cuprobe.service.cli sweep show
id=$(python3 -m cuprobe.service.cli sweep show | head -1 | cut -d' ' -f1)  # newest first
python3 -m cuprobe.service.cli sweep show "$id" --json | python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
c = collections.Counter(str(f.get("confirmation")) for case in s["cases"] for f in case["findings"])
print("cases", len(s["cases"]), "processes", len(s["processes"]), "wall_s", s["wall_s"], "confirmations", dict(c))
m = [m for p in s["processes"] for m in p["messages"]]
print("processes whose message says the re-runs were shared:", sum("one set for the sweep" in x for x in m), "of", len(m))
print(m[0][-300:])'
cp "$CUPROBE_DATA_DIR/cuprobe.db" "$OUT/cuprobe.db"
echo "== done $(date -u +%T)"
