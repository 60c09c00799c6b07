#!/usr/bin/env bash
# What a stalled sanitizer target spins on. At K > 1 on the 384-case grid (bench/sweep.py --full --skip-compare),
# one target process sometimes never finishes: it runs at ~98 % of a core while its compute-sanitizer front end
# waits in epoll. This runs the grid at K = 4, then K = 2, and for every narrow-matmul target still alive after
# WATCH_S seconds records: its Python and native stacks (py-spy dump --native, carried as a wheel), which thread
# burns the CPU (utime of every thread, sampled 1 s apart), each thread's syscall and wait channel, its open files,
# the GPU's load, and last every host thread's backtrace (cuda-gdb attached in batch mode; the box has no gdb).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/stall.sh [LIMIT_S [WATCH_S]]
set -uo pipefail
OUT=${OUT:-/tmp/out}; O="$OUT/stall"; mkdir -p "$O"
limit=${1:-75}; watch_at=${2:-40}
export PYTHONUNBUFFERED=1
source "$(dirname "$0")/stall_lib.sh"

for k in 4 2; do
  tag="k$k"; : > "$O/$tag-bench.txt"
  timeout "$limit" python3 bench/sweep.py --full --skip-compare --slots "$k" --out "$O/bench-$tag" \
    > "$O/$tag-bench.txt" 2> "$O/$tag-progress.txt" &
  bench=$!
  waited=0
  while kill -0 "$bench" 2>/dev/null && (( waited < watch_at )); do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$bench" 2>/dev/null; then
    ps -eo pid,ppid,stat,pcpu,etimes,rss,wchan:20,args --sort=pid | grep -E 'sanitizer|probes|sweep.py' \
      | grep -v grep | cut -c1-220 > "$O/$tag-ps.txt"
    # the targets that have run longer than WATCH_S - 10 s (a healthy one ends within ~25 s), at most two
    for p in $(ps -eo pid,etimes,args | awk -v t=$((watch_at - 10)) '$2 > t && /python3 -m cuprobe.probes narrow-matmul/ {print $1}' | head -2); do
      inspect "$p" "$tag"
    done
  fi
  wait "$bench"; echo "K=$k bench rc=$? after ${SECONDS}s" | tee -a "$O/$tag-bench.txt"
  pkill -f 'python3 -m cuprobe.probes narrow-matmul'; pkill -f compute-sanitizer; sleep 1
done
