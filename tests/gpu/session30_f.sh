#!/usr/bin/env bash
# Session 30, call 6: the GPU worker's warm starts on a sweep of singles, the kind they are for: uninit-read under
# memcheck over 16 values of n, one case per process (no batching for this probe), 16 jobs at the worker's K = 4:
# four waves of processes that are mostly start-up. Calls 1 and 4 (batches of 33 cases, three waves) found the
# marked sweep 1.5-5 % faster in the median; calls 2 and 3 found that a context's creation halves the case rate of
# the sanitizer processes beside it, so a spare's start-up costs the running wave about what it saves the next.
# Predicted (written before this call): marked (12 of 16 warm) at 0.85-1.05 of the unmarked wall: here the running
# processes are themselves mostly starting, and contexts created side by side wait on each other either way; every
# row clean, the same as local-1.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_f.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
cat > /tmp/singles.toml <<'TOML'
name = "singles"
[[entry]]
probe = "uninit-read"
tool = ["memcheck"]
grid = { n = [1024, 1025, 1026, 1027, 1028, 1029, 1030, 1031, 1032, 1033, 1034, 1035, 1036, 1037, 1038, 1039] }
TOML
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout "${BENCH_TIMEOUT_S:-400}" python3 bench/sweep_service.py --definition /tmp/singles.toml --rounds "${ROUNDS:-4}" \
  --cold-jobs --broker redis://127.0.0.1:6379/5 --out /tmp/sweep-service > "$OUT/sweep_service.log" 2>&1
echo "bench rc=$?"
grep -vE "^ +[0-9.]+s " "$OUT/sweep_service.log" | tail -22
tar -C /tmp -czf "$OUT/sweep-service.tgz" sweep-service 2>/dev/null
echo "== done $(date -u +%T)"
