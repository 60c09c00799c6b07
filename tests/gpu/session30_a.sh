#!/usr/bin/env bash
# Session 30, call 1: warm starts on the GPU worker (service/worker/warm.py). Until now a sweep through the service
# (the scheduled nightly's path: every process a job on the GPU worker's sweep lane) started every job's sanitizer
# process cold, where `cuprobe sweep run` readies spares for its later waves. A sweep now marks the jobs that a later
# job like them follows past the first wave (`warm_next`); the worker's pool process that runs one readies a spare
# (sanitizer, CUDA context, torch where the run uses it) once the job has begun its cases, and its next matching job
# runs there. A timing probe that takes the GPU ends every spare first.
# 1. tests/gpu/test_worker_warm_gpu.py, both sanitizers: a job in the worker's spare finds what a cold one finds;
#    taking the GPU exclusively ends the spare and gives its context's memory back.
# 2. bench/sweep_service.py on the 384-case grid with at most 33 cases per process (--batch-size 33: 12 jobs at the
#    worker's K = 4, three waves), through the service with the marks (`service`) and without (`service-cold`, no
#    spares), and here (`local`), rotating, 3 rounds.
# Predicted (written before this call): the tests pass on 2025.3.1; on 2026.4 (whose targets stall with several
# processes on one GPU) they may stall, since a spare waits on the GPU beside the job; the spare's context gives back
# 300-800 MiB. The bench: `service K = 4`, 12 processes; `warm` 8 of 12 in every service row, 0 in service-cold; the
# service rows 25-40 % less wall than service-cold (waves 2 and 3 skip each process's start, 1.5-2 s, and torch's
# import, 2-3 s, which the spares did while wave 1 ran); every row the same findings as local-1.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30
echo "== $(date -u +%T) start"
timeout 240 python3 -m pytest tests/gpu/test_worker_warm_gpu.py -m gpu -q -p no:cacheprovider --timeout 200 -rA -s \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|GPU memory used" "$OUT/tests.log" | cut -c1-300 | tail -12
export CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout "${BENCH_TIMEOUT_S:-300}" python3 bench/sweep_service.py --batch-size 33 --rounds "${ROUNDS:-3}" --cold-jobs \
  --broker redis://127.0.0.1:6379/5 --out /tmp/sweep-service > "$OUT/sweep_service.log" 2>&1
echo "bench rc=$?"
grep -vE "^ +[0-9.]+s " "$OUT/sweep_service.log" | tail -30
tar -C /tmp -czf "$OUT/sweep-service.tgz" sweep-service 2>/dev/null
echo "== done $(date -u +%T)"
