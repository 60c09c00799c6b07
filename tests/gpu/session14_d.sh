#!/usr/bin/env bash
# After the parse's children came to be forked from one server (service/sanitizer/forked.py): the GPU suite
# (tests/gpu/core.sh), the default path (`cuprobe sweep run` of the 384-case grid, twice: the first compiles the
# kernels; the fork server's children seen with ps while it runs), then two more off / on pairs of bench/sweep.py at
# K = 8 to narrow session 14's call 3. Predicted: core.sh 24 passed, 2 skipped; the sweep 124 findings all benign,
# exit 0, no parser server left after it; the slowest parse stage 0.2-0.3 s forked against 0.7-1.0 s started.
# About 7 minutes. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session14_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30
echo "== core.sh $(date -u +%T)"
OUT=$OUT bash tests/gpu/core.sh > /dev/null 2>&1
grep -E "passed|failed|error|^== |exit=|FAILED|ERROR" "$OUT/core.log" | tail -30
rm -rf "$OUT"/core-keep 2>/dev/null
export CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_DATA_DIR=/tmp/s14d-data
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
  ( for i in $(seq 60); do sleep 0.5; ps -eo pid,ppid,etimes,args | grep "[s]ervice.sanitizer.forked" ; done ) > "$OUT/ps-$r.txt" &
  watcher=$!
  t=$(date +%s.%N)
  python3 -m cuprobe.service.cli sweep run /tmp/grid384.toml > "$OUT/sweep-$r.md" 2> "$OUT/sweep-$r.err"
  echo "exit=$? wall=$(python3 -c "import time; print(round(time.time() - $t, 1))") s"; head -8 "$OUT/sweep-$r.md"
  sleep 1; echo "parser servers left after the sweep: $(ps -eo args | grep -c '[s]ervice.sanitizer.forked')"
  kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
  echo "parser server seen during the sweep: $(grep -c 'cuprobe.service.sanitizer.forked' "$OUT/ps-$r.txt") ps lines"
  rm -f "$OUT/ps-$r.txt"
done
id=$(python3 -m cuprobe.service.cli sweep show | head -1 | cut -d' ' -f1)
python3 -m cuprobe.service.cli sweep show "$id" --json | python3 -c '
import collections, json, sys
s = json.load(sys.stdin)
c = collections.Counter(str(f.get("confirmation")) for case in s["cases"] for f in case["findings"])
print("cases", len(s["cases"]), "processes", len(s["processes"]), "wall_s", s["wall_s"], "confirmations", dict(c))'
B="$OUT/benches"; mkdir -p "$B"
bench() {  # bench NAME FORK(0|1)
  local name=$1 fork=$2
  echo "== $name (CUPROBE_FORK_PARSERS=$fork) $(date -u +%T)"
  CUPROBE_FORK_PARSERS=$fork timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 \
    --out "$OUT/bench" > "$B/$name.txt" 2> "$B/$name.err"
  echo "rc=$?"; grep -E "^  8 |slowest process" "$B/$name.txt"
  rm -rf "$OUT/bench"
}
for r in 4 5; do
  bench "started-$r" 0
  bench "forked-$r" 1
done
tar czf "$OUT/benches.tgz" -C "$OUT" benches && rm -rf "$B"
echo "== done $(date -u +%T)"
