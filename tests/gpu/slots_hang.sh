#!/usr/bin/env bash
# The 384-case grid at K = 2 did not finish within 150 s on the H200 (K = 1: 47 s), with the GPU idle and about
# one host core busy. This runs it again with a watcher that, at 40 s and 80 s, records every process of the run
# (state, CPU, elapsed), the GPU's processes, and the tail of each slot's output, then lets it go on to its limit.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/slots_hang.sh [LIMIT_S]   (LIMIT_S, default 120)
set -uo pipefail
OUT=${OUT:-/tmp/out}; O="$OUT/slots_hang"; mkdir -p "$O"
limit=${1:-120}
export PYTHONUNBUFFERED=1
( for at in 40 80; do
    sleep 40
    {
      echo "== at ${at}s"
      ps -eo pid,ppid,stat,pcpu,etimes,rss,wchan:20,args --sort=pid | grep -E 'sanitizer|probes|sweep.py' | grep -v grep | cut -c1-260
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
      for f in $(find /tmp/cuprobe-sweep-bench-* -newer "$O/started" \( -name stdout.txt -o -name stderr.txt -o -name 'run.xml' \) 2>/dev/null); do
        echo "-- $f ($(stat -c %s "$f") bytes)"; tail -c 600 "$f" | tr -d '\0' | tail -4
      done
      for p in $(pgrep -f 'probes narrow-matmul'); do echo "-- /proc/$p/stack"; cat /proc/$p/stack 2>/dev/null | head -8; done
    } >> "$O/watch.txt" 2>&1
  done ) &
watcher=$!
touch "$O/started"
timeout "$limit" python3 bench/sweep.py --full --skip-compare --slots 2 --out "$O/bench" > "$O/bench.txt" 2> "$O/bench-progress.txt"
echo "bench rc=$?" | tee -a "$O/bench.txt"
kill $watcher 2>/dev/null
tar -czf "$O/slot-dirs.tgz" --exclude='*.xml' /tmp/cuprobe-sweep-bench-* 2>/dev/null
