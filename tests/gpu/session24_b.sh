#!/usr/bin/env bash
# Next: the nightly's 384-case grid run here (`cuprobe sweep run`'s path: K processes, one shared set of re-runs, no
# kept pools) against the same grid through the service (the scheduled sweep's path: every process a job on the
# GPU worker's sweep lane, at the worker's K), the jobs of the grid sharing one set of re-runs on the host
# (`confirm_share`, service/probing/confirm_host.py) and, as before that was built, each job with its own four
# (`--own-reruns`), taking turns (bench/sweep_service.py; the box's Redis as the broker, its own SQLite store).
# Predicted (written before any GPU run of it): here 9.5-12 s (cold, K = 8: 115,000-145,000 cases per GPU-hour, as
# the cold rows of sessions 12-23). The service plans for the GPU worker's published K, 4 with the confirmation on
# (`service K = 4` in the log): four jobs of 96 cases in one wave. With one set of re-runs per host 12-15 s
# (92,000-115,000: local K = 4 with a shared set took 11.2-12.8 s cold in session 12, plus each job's claim, store
# and poll; `shared` 4 of 4); with each job's own 16-20 s (69,000-86,000: 16 bare processes, as session 11's K = 4
# with one set per batch, 16.0 s with spares); so sharing at 0.65-0.85 of the own-re-runs wall; findings identical.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session24_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout ${BENCH_TIMEOUT_S:-270} python3 bench/sweep_service.py --rounds "${ROUNDS:-2}" --own-reruns --broker redis://127.0.0.1:6379/5 \
  --out "$OUT/sweep-service" 2>&1 | tee "$OUT/sweep_service.log"
echo "== done $(date -u +%T) rc=${PIPESTATUS[0]}"
