#!/usr/bin/env bash
# Next: the nightly's 384-case grid run here (`cuprobe sweep run`'s path: K processes, one shared set of re-runs, no
# kept pools) against the same grid through the service (the scheduled sweep's path: every process a job on the
# GPU worker's sweep lane, at the worker's K), the jobs of the grid sharing one set of re-runs on the host
# (`confirm_share`, service/probing/confirm_host.py) and, as before that was built, each job with its own four
# (`--own-reruns`), taking turns (bench/sweep_service.py; the box's Redis as the broker, its own SQLite store).
# Predicted (written before any GPU run of it): here 9.5-12 s (cold, K = 8: 115,000-145,000 cases per GPU-hour, as
# the cold rows of sessions 12-23); through the service with one set per host 14-22 s (65,000-100,000: eight jobs in
# two waves at the worker's K = 4, four re-runs in all, the second wave reading the first's; `shared` 8 of 8);
# with each job's own 20-35 s (40,000-70,000: 32 bare processes, as session 11-12's one set per batch locally,
# 22.5-26.0 s at K = 8); so sharing 0.6-0.8 of the own-re-runs wall; findings identical in every row.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session24_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout 230 python3 bench/sweep_service.py --rounds "${ROUNDS:-2}" --own-reruns --broker redis://127.0.0.1:6379/5 \
  --out "$OUT/sweep-service" 2>&1 | tee "$OUT/sweep_service.log"
echo "== done $(date -u +%T) rc=${PIPESTATUS[0]}"
