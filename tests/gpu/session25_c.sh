#!/usr/bin/env bash
# Session 25's third call: the scheduled sweep of the 384-case grid through the service, its CPU worker's process
# killed (SIGKILL) once its jobs are sent, resumed by one maintenance pass (tests/gpu/resume_sweep.py).
# Predicted (written before this call): stored `done`, its message "resumed after its process (pid ...) ended ...:
# 4 job(s) it had sent taken back, 0 sent now" (planned for the GPU worker's K = 4); every case as the run here
# (clean 260, findings 124); 4 of 4 processes deciding from one set of re-runs on this host; its wall, counted from
# when it began, 11-15 s (the service rows of session 25's second call, 11.3-12.9 s, plus noticing the kill and one
# maintenance pass).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session25_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout 280 python3 tests/gpu/resume_sweep.py --broker redis://127.0.0.1:6379/5 --timeout-s 120 2>&1 | tee "$OUT/resume_sweep.log"
echo "== done $(date -u +%T) rc=${PIPESTATUS[0]}"
