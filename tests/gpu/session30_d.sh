#!/usr/bin/env bash
# Session 30, call 4: more rounds of call 1's service comparison (session30_a.sh at 3ca4917, H100: through the
# service with the GPU worker's spares 14.1 s median against 14.9 s without, ahead in 2 of 3 rounds), to say whether
# the worker's warm starts belong on by default. Calls 2 and 3 found why the gain is small: a spare's CUDA context,
# created beside the running wave, halves those processes' case rate while it is made (tests/gpu/start_interference.py).
# Predicted (written before this call): the marked rows 3-8 % below the unmarked in the median, ahead in at least
# 3 of 5 rounds; warm 8 of 12 in every marked row, 0 unmarked; the same findings in every row.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session30_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
echo "== $(date -u +%T) start"
python3 -c "import redis; redis.Redis.from_url('redis://127.0.0.1:6379/5').flushdb()" && echo "redis db 5 flushed"
timeout "${BENCH_TIMEOUT_S:-420}" python3 bench/sweep_service.py --batch-size 33 --rounds "${ROUNDS:-5}" --cold-jobs \
  --broker redis://127.0.0.1:6379/5 --out /tmp/sweep-service > "$OUT/sweep_service.log" 2>&1
echo "bench rc=$?"
grep -vE "^ +[0-9.]+s " "$OUT/sweep_service.log" | tail -24
python3 - <<'PY'
import glob, json, statistics
for path in ("service", "service-cold"):
    waves = {0: [], 1: [], 2: []}
    for f in sorted(glob.glob(f"/tmp/sweep-service/{path}-[0-9]*.json")):
        for p in json.load(open(f))["processes"]:
            waves[p["index"] // 4].append(p["stages"][0]["run"])
    print(path, "run stage per wave (median s):", {w + 1: round(statistics.median(v), 2) for w, v in waves.items() if v})
PY
tar -C /tmp -czf "$OUT/sweep-service.tgz" sweep-service 2>/dev/null
echo "== done $(date -u +%T)"
