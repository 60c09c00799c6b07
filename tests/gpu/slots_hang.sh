#!/usr/bin/env bash
# The 384-case grid at K = 1, 2, 4, 8 (bench/sweep.py --full --skip-compare): cases per GPU-hour at each K. Once
# K = 2 did not finish within 150 s on the H200 (K = 1: 47 s), with the GPU idle and about one host core busy, so
# a watcher records, at 50 s and 100 s, every process of the run (state, CPU, elapsed, wait channel), the GPU's
# processes, the extension's build locks and the tail of each slot's output.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/slots_hang.sh [LIMIT_S [SLOTS]]
#   (LIMIT_S default 150, SLOTS default 1,2,4,8)
set -uo pipefail
OUT=${OUT:-/tmp/out}; O="$OUT/slots_hang"; mkdir -p "$O"
limit=${1:-150}; slots=${2:-1,2,4,8}
export PYTHONUNBUFFERED=1
( for at in 50 100; do
    sleep 50
    {
      echo "== at ${at}s"
      ps -eo pid,ppid,stat,pcpu,etimes,rss,wchan:20,args --sort=pid | grep -E 'sanitizer|probes|sweep.py' | grep -v grep | cut -c1-260
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
      for f in $(find /tmp/cuprobe-sweep-bench-* -newer "$O/started" \( -name stdout.txt -o -name stderr.txt -o -name 'run.xml' \) 2>/dev/null); do
        echo "-- $f ($(stat -c %s "$f") bytes)"; tail -c 600 "$f" | tr -d '\0' | tail -4
      done
      echo "-- torch extension build locks (a lock left by a killed builder makes every later load wait forever)"
      find "$PWD/cuprobe-data" /tmp /root/.cache -path '*allocator_nvtx*' -name lock -exec ls -la {} \; 2>/dev/null
      for p in $(pgrep -f 'probes narrow-matmul'); do echo "-- /proc/$p/stack"; cat /proc/$p/stack 2>/dev/null | head -8; done
    } >> "$O/watch.txt" 2>&1
  done ) &
watcher=$!
touch "$O/started"
timeout "$limit" python3 bench/sweep.py --full --skip-compare --slots "$slots" --out "$O/bench" > "$O/bench.txt" 2> "$O/bench-progress.txt"
echo "bench rc=$?" | tee -a "$O/bench.txt"
kill $watcher 2>/dev/null
tar -czf "$O/slot-dirs.tgz" --exclude='*.xml' /tmp/cuprobe-sweep-bench-* 2>/dev/null
