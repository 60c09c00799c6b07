#!/usr/bin/env bash
# Next: the nightly's 384-case grid run here (`cuprobe sweep run`'s path: K processes, one shared set of re-runs, no
# kept pools) against the same grid through the service (the scheduled sweep's path: every process a job on the
# GPU worker's sweep lane, each confirming with its own four re-runs, at the worker's K), side by side, alternating
# (bench/sweep_service.py; the box's Redis as the broker, its own SQLite store).
# Predicted: here 9.5-12 s (cold, K = 8: 115,000-145,000 cases per GPU-hour, as the cold rows of sessions 12-23);
# through the service 20-35 s (40,000-70,000): eight jobs at the worker's K = 4, each starting four re-runs (32 bare
# processes where the local sweep starts 4; session 12 measured one set per batch at 22.5-26.0 s locally), plus the
# jobs' own overhead; findings identical (every finding benign, every control right).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session24_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout 230 python3 bench/sweep_service.py --rounds "${ROUNDS:-2}" --broker redis://127.0.0.1:6379/5 \
  --out "$OUT/sweep-service" 2>&1 | tee "$OUT/sweep_service.log"
echo "== done $(date -u +%T) rc=${PIPESTATUS[0]}"
