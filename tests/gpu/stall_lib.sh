#!/usr/bin/env bash
# Functions to look inside a stalled sanitizer target (sourced by tests/gpu/stall.sh and tests/gpu/session5_b.sh):
#   inspect PID LABEL       writes $O/LABEL-pidPID.txt: stacks (py-spy dump --native, carried as a wheel), per-thread
#                           CPU sampled 1 s apart, syscalls and wait channels, open files, the GPU's load, the
#                           sanitizer front end's threads, every host thread's backtrace (cuda-gdb; the box has no gdb)
#   watch_stalls AGE_S MAX  in the background: every 10 s, inspect each narrow-matmul target older than AGE_S
#                           (at most MAX of them); a healthy batch of the grid ends within ~30 s
# Needs O (the output directory).
PYSPY=$(command -v py-spy || echo "$HOME/.local/bin/py-spy")

threads() {  # PID: one line per thread: tid, name, state, utime+stime (ticks), wait channel, syscall number
  for t in /proc/"$1"/task/*; do
    printf '%s %-16s %s %s %s sys=%s\n' "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" \
      "$(awk '{print $3, $14+$15}' "$t/stat" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)" \
      "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
  done
}

inspect() {  # PID LABEL
  local p=$1 f="$O/$2-pid$1.txt"
  {
    echo "== $2 pid $p: $(tr '\0' ' ' < /proc/"$p"/cmdline | cut -c1-300)"
    grep -E 'State|Threads|ctxt' /proc/"$p"/status
    echo "-- threads (tid name state cpu-ticks wchan syscall), then 1 s later"
    threads "$p"; sleep 1; echo "--"; threads "$p"
    echo "-- open files"; ls -l /proc/"$p"/fd 2>/dev/null | awk '{print $9, $10, $11}' | tail -n +2
    echo "-- GPU"; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
    echo "-- py-spy dump --native"; timeout 40 "$PYSPY" dump --pid "$p" --native 2>&1
    echo "-- py-spy dump (again, 2 s later)"; sleep 2; timeout 40 "$PYSPY" dump --pid "$p" 2>&1
    echo "-- the sanitizer front end (parent of the subreaper)"
    local sub front; sub=$(ps -o ppid= -p "$p" | tr -d ' '); front=$(ps -o ppid= -p "$sub" | tr -d ' ')
    [ -n "$front" ] && { threads "$front"; ls -l /proc/"$front"/fd 2>/dev/null | awk '{print $9, $10, $11}' | tail -n +2; }
    # cuda-gdb's attach made the driver report an internal error (CUresult 10) in the stalled target on
    # 2026-12-03 and ended the stall with wrong results, so it runs only when asked for (CUDA_GDB=1).
    [ "${CUDA_GDB:-0}" = 1 ] || return 0
    echo "-- cuda-gdb: every host thread's backtrace"
    timeout 30 cuda-gdb -p "$p" -batch -ex 'set pagination off' -ex 'info threads' -ex 'thread apply all bt 25' 2>&1 | tail -250
  } > "$f" 2>&1
}

watch_stalls() {
  local age=$1 max=$2 seen=" " n=0
  while (( n < max )); do
    sleep 10
    for p in $(ps -eo pid,etimes,args | awk -v t="$age" '$2 > t && $3 ~ /python3$/ && /-m probes narrow-matmul/ {print $1}'); do
      [[ "$seen" == *" $p "* ]] && continue
      seen+="$p "; n=$((n + 1))
      ps -eo pid,ppid,stat,pcpu,etimes,rss,wchan:20,args --sort=pid | grep -E 'sanitizer|probes|sweep.py' \
        | grep -v grep | cut -c1-220 > "$O/stall-ps-$p.txt"
      inspect "$p" stall
      (( n >= max )) && break
    done
  done
}
