#!/usr/bin/env bash
# Whether probe processes that spin a core while they wait for the GPU are what the confirmation's re-runs and the
# sanitizer runs cost each other at K = 8. By default the driver makes a process with fewer CUDA contexts than the
# host has cores spin while it waits (CU_CTX_SCHED_AUTO); CUPROBE_CUDA_SCHEDULE=blocking|yield sets the primary
# context's flag in every probe process cuprobe starts. First: the flag as read back from the driver, bare and under
# initcheck. Then bench/sweep.py --full --slots 8 --no-cold, three settings alternating (default, blocking, yield),
# as many rounds as fit in about 7 minutes. Predicted: blocking cuts the probe processes' CPU seconds by a quarter
# or more and the mean wall by 0.5-1.5 s; yield in between. From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session15_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
P='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
FLAG='from probes.gpu import cuda_context, schedule_flag
with cuda_context():
    print("flag", schedule_flag())'
for s in "" blocking yield; do
  echo "CUPROBE_CUDA_SCHEDULE=${s:-unset}: bare: $(CUPROBE_CUDA_SCHEDULE=$s python3 -c "$FLAG" 2>&1 | tail -1);" \
    "initcheck: $(CUPROBE_CUDA_SCHEDULE=$s $CUPROBE_SANITIZER_PATH --tool initcheck python3 -c "$FLAG" 2>&1 | grep -E '^flag|ERROR SUMMARY' | tr '\n' ' ')"
done
timeout 200 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold --out "$OUT/bench" > "$OUT/warmup.txt" 2>&1
echo "warm-up sweep rc=$?"; rm -rf "$OUT/bench"
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
began=$(date +%s)
for r in 1 2 3 4 5 6 7 8; do
  for v in default blocking yield; do
    [ $(( $(date +%s) - began )) -gt 400 ] && break 2
    case $v in
      default) env=(CUPROBE_CUDA_SCHEDULE=auto);;
      *) env=(CUPROBE_CUDA_SCHEDULE=$v);;
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
walls, cpu = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+) rc=(\d+) wall,cases/h: ([0-9.]+) ([0-9,]+)", line)
    if m:
        walls.setdefault(m[1], []).append((float(m[3]), int(m[4].replace(",", "")), m[2]))
        c = re.search(r"python3 ([0-9.]+), compute-sanitiz ([0-9.]+)", line)
        if c:
            cpu.setdefault(m[1], []).append(float(c[1]) + float(c[2]))
for name, rows in walls.items():
    w = [r[0] for r in rows]
    print(f"{name:8} n={len(w)} mean {statistics.mean(w):.2f} s median {statistics.median(w):.2f} s "
          f"walls {w} cases/h {[r[1] for r in rows]} rc {[r[2] for r in rows]} "
          f"CPU s (python3 + sanitizer) mean {statistics.mean(cpu.get(name, [0])):.1f}")
PY
echo "== done $(date -u +%T)"
