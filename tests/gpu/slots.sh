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
python3 -m service.cli doctor 2>&1 | tail -12

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

step "matmul-throughput through the service, GPU worker with 4 slots"
data=/tmp/cuprobe-slots; rm -rf "$data"; mkdir -p "$data"; port=8766
export CUPROBE_DATA_DIR="$data" CUPROBE_DATABASE_URL="sqlite:///$data/cuprobe.db" CUPROBE_GPU_SLOTS=4
export CUPROBE_BROKER_URL=redis://127.0.0.1:6379/5 CUPROBE_API_URL="http://127.0.0.1:$port"
python3 -c "import redis; redis.Redis.from_url('$CUPROBE_BROKER_URL').flushdb()"
python3 -m service.cli worker --loglevel WARNING > "$out/worker.log" 2>&1 & worker=$!
python3 -m service.cli serve --port $port > "$out/api.log" 2>&1 & api=$!
trap 'kill $worker $api 2>/dev/null; wait $worker $api 2>/dev/null' EXIT
for _ in $(seq 90); do curl -sf "$CUPROBE_API_URL/health" | grep -q 'gpu.sm' && break; sleep 1; done
head -3 "$out/worker.log"
# One bf16 shape keeps each run short (the defaults take about two minutes); the same params idle and busy.
tp() {
  python3 -m service.cli submit matmul-throughput -p 'dtypes=["bf16"]' -p 'shapes=[[5120,2048,8192]]' --wait --json \
    > "$out/throughput-$1.json"; echo "throughput $1 exit=$?"
}
for i in 1 2 3; do tp "idle-$i"; done
# Busy: eight narrow-matmul initcheck jobs on the sweep lane fill the slots; then throughput asks for the GPU.
for i in $(seq 8); do
  python3 -m service.cli submit narrow-matmul --tool initcheck --lane sweep -p 'n=[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]' --json > "$out/sweep-job-$i.json"
done
sleep 3
tp busy
python3 - "$out" <<'PY'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
def stats(name):
    job = json.loads((out / f"throughput-{name}.json").read_text())
    res = job.get("result") or {}
    obs = [c.get("observations", {}) for c in res.get("cases", [])]
    tflops = [o.get("tflops") for o in obs if isinstance(o, dict) and o.get("tflops") is not None]
    return job.get("outcome"), tflops, job.get("started_at"), job.get("finished_at"), res.get("duration_s")
for name in ["idle-1", "idle-2", "idle-3", "busy"]:
    outcome, tflops, started, finished, ran = stats(name)
    print(f"{name:<7} {outcome:<10} claimed {started} finished {finished} probe ran {ran:.1f} s "
          f"TFLOP/s {[round(t, 1) for t in tflops]}")
PY
sweep_done=$(python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print(" ".join(json.loads(p.read_text())["id"][:8] for p in sorted(out.glob("sweep-job-*.json"))))
PY
)
echo "sweep jobs: $sweep_done"
grep -c "sanitizer slot" "$out/worker.log" || true
ls -la "$out"
