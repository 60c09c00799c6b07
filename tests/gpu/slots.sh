#!/usr/bin/env bash
# K sanitizer processes on one GPU, on a GPU machine, in one command (from the project root, after the GPU set-up
# in docs/gpu-box.md):  bash tests/gpu/slots.sh
#  1. bench/sweep.py --full: the 48-case grid per case (baseline) and batched at K = 1, 2, 4, 8 and the default,
#     then the 384-case grid at each K, with GPU memory/utilisation and host CPU sampled once a second;
#  2. matmul-throughput through the service on a GPU worker with K slots: idle three times, then while sweep jobs
#     keep the worker's other slots busy — it must wait for the GPU and match the idle runs within their spread.
# Writes $OUT/slots/: slots.log (all of it), dmon.txt, cpu.txt, worker.log, api.log, *.json.
set -uo pipefail
OUT=${OUT:-/tmp/out}; out="$OUT/slots"; mkdir -p "$out"
exec > >(tee -a "$out/slots.log") 2>&1
export PYTHONUNBUFFERED=1
step() { echo; echo "== $(date -u +%T) $*"; }
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=index,uuid,name,driver_version,memory.free --format=csv,noheader; nproc
python3 -m cuprobe.service.cli doctor 2>&1 | tail -12

if [ -z "${SKIP_BENCH:-}" ]; then  # SKIP_BENCH=1: only the service half
step "bench/sweep.py --full (48-case baseline + batched at each K; 384-case grid at each K)"
nvidia-smi dmon -s um -d 1 > "$out/dmon.txt" 2>&1 & dmon=$!
( while sleep 1; do echo "$(date +%s) $(head -1 /proc/stat)"; done ) > "$out/cpu.txt" & cpu=$!
# BENCH_ARGS and BENCH_S narrow the bench (e.g. the 384-case grid only: "--full --skip-compare --slots 1,2,4,8").
timeout "${BENCH_S:-300}" python3 bench/sweep.py ${BENCH_ARGS:---full --slots 1,2,4,8} --out "$out/bench" 2> "$out/bench-progress.txt"
echo "bench rc=$?"
kill $dmon $cpu 2>/dev/null
python3 - "$out/cpu.txt" "$out/dmon.txt" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
busy = []
for a, b in zip(rows, rows[1:]):
    ta, tb = list(map(int, a[2:])), list(map(int, b[2:]))
    total, idle = sum(tb) - sum(ta), (tb[3] + tb[4]) - (ta[3] + ta[4])
    busy.append(100 * (total - idle) / max(1, total))
print(f"host CPU busy: median {sorted(busy)[len(busy)//2]:.0f}%, max {max(busy):.0f}% over {len(busy)} s")
sm = [int(l.split()[1]) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#") and l.split()[1].isdigit()]
fb = [int(l.split()[5]) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#") and len(l.split()) > 5 and l.split()[5].isdigit()]
if sm:
    print(f"GPU SM busy: median {sorted(sm)[len(sm)//2]}%, max {max(sm)}%; framebuffer used max {max(fb) if fb else '?'} MiB")
PY

fi
[ -n "${SKIP_SERVICE:-}" ] && exit 0  # SKIP_SERVICE=1: only the bench half

step "matmul-throughput through the service, GPU worker with ${SLOTS:-2} slots"
data=/tmp/cuprobe-slots; rm -rf "$data"; mkdir -p "$data"; port=8766
export CUPROBE_DATA_DIR="$data" CUPROBE_DATABASE_URL="sqlite:///$data/cuprobe.db" CUPROBE_GPU_SLOTS=${SLOTS:-2}
export CUPROBE_BROKER_URL=redis://127.0.0.1:6379/5 CUPROBE_API_URL="http://127.0.0.1:$port"
python3 -c "import redis; redis.Redis.from_url('$CUPROBE_BROKER_URL').flushdb()"
python3 -m cuprobe.service.cli worker --loglevel WARNING > "$out/worker.log" 2>&1 & worker=$!
python3 -m cuprobe.service.cli serve --port $port > "$out/api.log" 2>&1 & api=$!
trap 'kill $worker $api 2>/dev/null; wait $worker $api 2>/dev/null' EXIT
for _ in $(seq 90); do curl -sf "$CUPROBE_API_URL/health" | grep -q 'gpu.sm' && break; sleep 1; done
head -3 "$out/worker.log"
# Idle three times, then while eight sweep jobs fill the slots (tests/gpu/throughput_busy.py says why it passes).
timeout 240 python3 tests/gpu/throughput_busy.py --url "$CUPROBE_API_URL" --out "$out/busy" --sweep-jobs ${SWEEP_JOBS:-4}
echo "throughput_busy rc=$?"
grep -c "sanitizer slot" "$out/worker.log" || true
ls -la "$out"
