#!/usr/bin/env bash
# After the demangler came off for runs without host backtraces: the GPU suite (tests/gpu/core.sh: pytest tests/gpu
# on both sanitizers and the CLI on uninit-read), then the default path, `cuprobe sweep run` of the 384-case grid
# once (stored; its command line and console checked for `--demangle no`). Predicted: core.sh as in session 12
# (24 passed, 2 skipped); the sweep 9-14 s, 124 findings all benign, every process run with `--demangle no`.
# About 3 minutes. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_f.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30
echo "== core.sh $(date -u +%T)"
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
grep -E "passed|failed|error|^== |exit=|FAILED|ERROR" "$OUT/core.log" | tail -30
rm -rf "$OUT"/core-keep 2>/dev/null
export CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_DATA_DIR=/tmp/s13f-data
rm -rf "$CUPROBE_DATA_DIR"
cat > /tmp/grid384.toml <<'TOML'
name = "grid384"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = { m = 32, k = 32, tile = 32 }
grid = { n = { first = 1, last = 128 }, variants = ["unguarded", "guarded", "torch"] }
TOML
echo "== cuprobe sweep run grid384 $(date -u +%T)"
t=$(date +%s.%N)
python3 -m cuprobe.service.cli sweep run /tmp/grid384.toml > "$OUT/sweep.md" 2> "$OUT/sweep.err"
echo "exit=$? wall=$(python3 -c "import time; print(round(time.time() - $t, 1))") s"; head -8 "$OUT/sweep.md"
id=$(python3 -m cuprobe.service.cli sweep show | head -1 | cut -d' ' -f1)
python3 -m cuprobe.service.cli sweep show "$id" --json | python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
c = collections.Counter(str(f.get("confirmation")) for case in s["cases"] for f in case["findings"])
print("cases", len(s["cases"]), "processes", len(s["processes"]), "wall_s", s["wall_s"], "confirmations", dict(c))'
# the console text of each sanitizer run the sweep kept: mangled device-function names mean --demangle no
echo "stdout.txt kept: $(find / -xdev -path /proc -prune -o -name stdout.txt -newer /tmp/grid384.toml -print 2>/dev/null | wc -l);" \
  "naming _Z12tiled_matmul: $(find / -xdev -path /proc -prune -o -name stdout.txt -newer /tmp/grid384.toml -print 2>/dev/null | xargs grep -l _Z12tiled_matmul 2>/dev/null | wc -l);" \
  "naming 'void tiled_matmul<': $(find / -xdev -path /proc -prune -o -name stdout.txt -newer /tmp/grid384.toml -print 2>/dev/null | xargs grep -l 'void tiled_matmul<' 2>/dev/null | wc -l)"
echo "== done $(date -u +%T)"
