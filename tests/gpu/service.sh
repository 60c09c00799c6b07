#!/usr/bin/env bash
# The service on a GPU machine (and the one-GPU half of the two-GPU check), in one command: the whole service path — API, Redis,
# GPU worker, compute-sanitizer, store — for uninit-read and narrow-matmul under initcheck with the findings
# read back over HTTP and the CLI; 16 narrow-matmul jobs drained on one GPU; bench/overhead.py against that
# stack. From the project root on the box:
#   source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/service.sh
# Writes to $OUT/service/: service.log (everything, in order), worker.log, api.log, *.json bodies.
set -uo pipefail
OUT=${OUT:-/tmp/out}; out="$OUT/service"; mkdir -p "$out"
exec > >(tee -a "$out/service.log") 2>&1
export PYTHONUNBUFFERED=1
data=/tmp/cuprobe-service; rm -rf "$data"; mkdir -p "$data"
port=8765
export CUPROBE_DATA_DIR="$data" CUPROBE_DATABASE_URL="sqlite:///$data/cuprobe.db"
export CUPROBE_BROKER_URL=redis://127.0.0.1:6379/3 CUPROBE_API_URL="http://127.0.0.1:$port"
cli() { python3 -m cuprobe.service.cli "$@"; }
step() { echo; echo "== $(date -u +%T) $*"; }
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv,noheader
python3 -c "import redis; redis.Redis.from_url('$CUPROBE_BROKER_URL').flushdb()" && echo "redis db 3 flushed"

step "start: cuprobe worker (one per GPU + CPU) and cuprobe serve on :$port"
cli worker --loglevel WARNING > "$out/worker.log" 2>&1 & worker_pid=$!
cli serve --port $port > "$out/api.log" 2>&1 & api_pid=$!
# Wait for these two only: a bare `wait` would also wait for the tee above, forever.
trap 'kill $worker_pid $api_pid 2>/dev/null; wait $worker_pid $api_pid 2>/dev/null' EXIT
for _ in $(seq 120); do
  curl -sf "$CUPROBE_API_URL/health" > "$out/health.json" && grep -q 'gpu.sm' "$out/health.json" && break
  sleep 1
done
cat "$out/health.json"; echo

for spec in "uninit-read initcheck" "narrow-matmul initcheck"; do
  set -- $spec; probe=$1; tool=$2
  step "cuprobe submit $probe --tool $tool --wait --json (expected: findings, exit 1)"
  cli submit "$probe" --tool "$tool" --wait --json > "$out/$probe-job.json"; echo "exit=$?"
  id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$out/$probe-job.json")
  python3 - "$out/$probe-job.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
r = job.get("result") or {}
print(f"job {job['id']} state={job['state']} outcome={job['outcome']} findings={job['findings']} "
      f"gpu={r.get('environment', {}).get('gpu')} {r.get('environment', {}).get('gpu_uuid')} "
      f"sanitizer={r.get('sanitizer_version')} duration={r.get('duration_s')} s")
for c in r.get("cases", []):
    if not c["passed"]:
        print("  CASE NOT PASSED", c["id"], c["reason"])
print(f"  cases: {len(r.get('cases', []))}, all passed: {all(c['passed'] for c in r.get('cases', []))}")
PY
  step "GET /jobs/$id/findings"
  curl -s -w '\nHTTP %{http_code}\n' "$CUPROBE_API_URL/jobs/$id/findings" > "$out/$probe-findings.json"
  tail -1 "$out/$probe-findings.json"
  python3 - "$out/$probe-findings.json" <<'PY'
import json, sys
body = json.loads(open(sys.argv[1]).read().rsplit("\nHTTP", 1)[0])
print(f"schema_version={body['schema_version']} findings={len(body['findings'])}")
for f in body["findings"]:
    print(f"  {f['case']!s:18} {f['kind']:28} {f['file']}:{f['line']} count={f['count']} {f['signature']}")
PY
  step "cuprobe results $id"
  cli results "$id"; echo "exit=$?"
  step "GET /jobs/$id/artifacts/run.xml (size only)"
  curl -s -o /dev/null -w 'HTTP %{http_code} %{size_download} bytes\n' "$CUPROBE_API_URL/jobs/$id/artifacts/run.xml"
done
step "GET /jobs?probe=narrow-matmul&outcome=findings"
curl -s "$CUPROBE_API_URL/jobs?probe=narrow-matmul&outcome=findings" | python3 -c \
  "import json,sys; b=json.load(sys.stdin); print(len(b['jobs']), 'job(s):', [(j['id'][:8], j['outcome']) for j in b['jobs']])"

step "16 narrow-matmul jobs under initcheck on $(nvidia-smi -L | wc -l) GPU(s): drain time, where each ran"
# Small jobs (n = 64: the padded width, so clean; no torch) keep the drain cheap in device time.
python3 tests/gpu/drain.py --url "$CUPROBE_API_URL" --jobs 16 --params '{"n": [64], "variants": ["unguarded", "guarded"]}' \
  --json-out "$out/drain-1gpu.json"; echo "exit=$?"

step "bench/overhead.py uninit-read initcheck, against this stack (Redis, SQLite, cuprobe worker/serve)"
python3 bench/overhead.py --url "$CUPROBE_API_URL" --probe uninit-read --tool initcheck --repeats 5 \
  --json-out "$out/overhead-uninit-read.json"; echo "exit=$?"
kill $worker_pid $api_pid 2>/dev/null; wait $worker_pid $api_pid 2>/dev/null
step "done"
ls -la "$out"
