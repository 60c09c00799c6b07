#!/usr/bin/env bash
# Two GPUs of one machine, in one command: the same 16 narrow-matmul initcheck
# jobs drained by a pool on one GPU, then by the pool on both; where each job ran comes from the stored results
# (the GPU the worker was pinned to and the device the probe itself saw). From the project root on the box:
#   source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/two_gpu.sh
# Writes $OUT/two_gpu/: two_gpu.log, drain-1gpu.json, drain-2gpu.json, worker-*.log.
set -uo pipefail
OUT=${OUT:-/tmp/out}; out="$OUT/two_gpu"; mkdir -p "$out"
exec > >(tee -a "$out/two_gpu.log") 2>&1
export PYTHONUNBUFFERED=1
port=8767
export CUPROBE_API_URL="http://127.0.0.1:$port"
params='{"n": [1, 2, 33, 64], "variants": ["unguarded", "guarded"]}'
nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv,noheader
all=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)

drain() {  # drain LABEL CUDA_VISIBLE_DEVICES-for-the-pool
  local label=$1 visible=$2 data=/tmp/cuprobe-two-$1
  rm -rf "$data"; mkdir -p "$data"
  export CUPROBE_DATA_DIR="$data" CUPROBE_DATABASE_URL="sqlite:///$data/cuprobe.db" CUPROBE_BROKER_URL=redis://127.0.0.1:6379/5
  python3 -c "import redis; redis.Redis.from_url('$CUPROBE_BROKER_URL').flushdb()"
  echo; echo "== $(date -u +%T) $label: cuprobe worker with CUDA_VISIBLE_DEVICES=$visible"
  CUDA_VISIBLE_DEVICES=$visible python3 -m cuprobe.service.cli worker --no-cpu --loglevel WARNING > "$out/worker-$label.log" 2>&1 &
  local worker=$!
  python3 -m cuprobe.service.cli serve --port $port > "$out/api-$label.log" 2>&1 &
  local api=$!
  for _ in $(seq 120); do
    curl -sf "$CUPROBE_API_URL/health" > "$out/health-$label.json" \
      && [ "$(grep -o 'gpu[0-9]*-sm' "$out/health-$label.json" | wc -l)" -ge "$(echo "$visible" | tr ',' '\n' | wc -l)" ] && break
    sleep 1
  done
  cat "$out/health-$label.json"; echo
  python3 tests/gpu/drain.py --url "$CUPROBE_API_URL" --jobs 16 --params "$params" --json-out "$out/drain-$label.json"
  echo "drain.py exit=$?"
  kill $worker $api 2>/dev/null; wait $worker $api 2>/dev/null
}

drain 1gpu "${all%%,*}"
drain 2gpu "$all"
python3 - "$out/drain-1gpu.json" "$out/drain-2gpu.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:])
print(f"\n{'pool':6} {'jobs':>5} {'drain s':>8}  jobs per GPU")
for label, d in (("1 GPU", one), ("2 GPUs", two)):
    print(f"{label:6} {len(d['jobs']):>5} {d['drain_s']:8.2f}  {d['per_gpu']}")
print(f"ratio 2-GPU / 1-GPU drain: {two['drain_s'] / one['drain_s']:.3f} (ideal 0.5)")
print(f"both GPUs ran jobs: {len([g for g in two['per_gpu'] if g]) == 2}")
print("each job on exactly one GPU (the probe saw one device, the one its worker was pinned to): "
      f"{all(j['cuda_devices'].get('count') == 1 and j['cuda_devices']['uuids'][0] == j['pinned_gpu'] for j in two['jobs'])}")
PY
