#!/usr/bin/env bash
# What the confirmation's re-runs cost a sweep at K = 8 with spares ready, and whether a lower CPU priority for them
# gives the sanitizer runs their cores back: bench/sweep.py --full --slots 8 --no-cold, four settings alternating
# (the default nice 10; CUPROBE_CONFIRM=0; CUPROBE_CONFIRM_NICE=19; CUPROBE_CONFIRM_IDLE=1, SCHED_IDLE), as many
# rounds as fit in about 8 minutes. Predicted: the confirmation off about 1 s faster than the default (mean), nice 19
# within 0.2 s of it, SCHED_IDLE 0.3-0.6 s faster with longer re-runs that still end before the slowest sanitizer
# run. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session15_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
# One sweep first, so the kernels the sanitizer runs build are cached before any timed row.
timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold --out "$OUT/bench" > "$OUT/warmup.txt" 2>&1
echo "warm-up sweep rc=$?"; rm -rf "$OUT/bench"
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
began=$(date +%s)
for r in 1 2 3 4 5 6; do
  for v in default off nice19 idle; do
    [ $(( $(date +%s) - began )) -gt 470 ] && break 2
    case $v in
      default) env=();;
      off) env=(CUPROBE_CONFIRM=0);;
      nice19) env=(CUPROBE_CONFIRM_NICE=19);;
      idle) env=(CUPROBE_CONFIRM_IDLE=1);;
    esac
    t=$(date +%s.%N)
    env "${env[@]}" timeout 120 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold --out "$OUT/bench" \
      > "$OUT/run.txt" 2>/dev/null
    rc=$?
    row=$(grep -E "^  8 " "$OUT/run.txt" | awk '{print $5, $6}')
    slow=$(grep -m1 "slowest process" "$OUT/run.txt" | sed 's/^ *//')
    conf=$(grep -m1 "confirmations" "$OUT/run.txt" | sed 's/^ *//')
    cpu=$(python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)" | head -1)
    echo "round $r $v rc=$rc wall,cases/h: $row | $slow | $conf | $cpu" | tee -a "$OUT/rows.txt"
    rm -rf "$OUT/bench"
  done
done
kill $sampler
echo "== summary (wall s per setting)"
python3 - "$OUT/rows.txt" <<'PY'
import re, statistics, sys
walls = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+) rc=(\d+) wall,cases/h: ([0-9.]+) ([0-9,]+)", line)
    if m:
        walls.setdefault(m[1], []).append((float(m[3]), int(m[4].replace(",", "")), m[2]))
for name, rows in walls.items():
    w = [r[0] for r in rows]
    print(f"{name:8} n={len(w)} mean {statistics.mean(w):.2f} s median {statistics.median(w):.2f} s "
          f"walls {w} cases/h {[r[1] for r in rows]} rc {[r[2] for r in rows]}")
PY
echo "== done $(date -u +%T)"
