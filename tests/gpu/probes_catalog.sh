#!/usr/bin/env bash
# The probe catalog on a GPU machine: every GPU probe case of the catalog, raw logs tarred into $OUT; what
# tests/data/probes-catalog keeps of it renders docs/probes-measured.md (docs/tools/probe_tables.py).
# Run from the project root there:  bash tests/gpu/probes_catalog.sh
# Writes $OUT/probes_catalog.log (this console), $OUT/probes_catalog.tgz (per step: cmd.txt, stdout.txt,
# stderr.txt, exit_code, wall_s, result.json, run.xml, table.txt) and $OUT/summary.txt. Steps are independent
# and run in priority order; a step that would start after HARD_S seconds is skipped and says so.
set -u
OUT=${OUT:-/tmp/out}
HARD_S=${HARD_S:-540}
work=/tmp/probes_catalog; rm -rf "$work"; mkdir -p "$work" "$OUT"
exec > >(tee "$OUT/probes_catalog.log") 2>&1
export PYTHONUNBUFFERED=1
summary=()

echo "== banner"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
nvcc --version | tail -2
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
python3 -c 'import triton; print("triton", triton.__version__)' || echo "triton: not importable"
python3 -c 'import pycuda; print("pycuda", pycuda.VERSION_TEXT)' || echo "pycuda: not importable"
sanitizers=()
for s in /tmp/site/nvidia/cu13/bin/compute-sanitizer /usr/local/cuda/bin/compute-sanitizer; do
  [ -x "$s" ] && sanitizers+=("$s") && echo "sanitizer $s: $("$s" --version | tail -1)"
done
SAN=${sanitizers[0]:-compute-sanitizer}
SAN2=${sanitizers[1]:-}

# step NAME LIMIT_S TOOL SANITIZER PROBE PARAMS [VAR=VALUE ...]: one probe process, bare or under the sanitizer.
step() {
  local name=$1 limit=$2 tool=$3 san=$4 probe=$5 params=$6; shift 6
  local left=$((HARD_S - SECONDS))
  if ((left < 30)); then
    summary+=("$(printf '%-30s %-9s %5s %8s  %s' "$name" "$tool" - - "skipped: time budget spent")"); return
  fi
  ((limit > left)) && limit=$left
  local dir="$work/$name"; mkdir -p "$dir"
  local cmd=(python3 -m cuprobe.probes "$probe" --tool "$tool" --params "$params" --out "$dir/result.json")
  if [ "$tool" != none ]; then
    cmd=("$san" --tool "$tool" --print-limit 0 --xml --save "$dir/run.xml" --error-exitcode 86 -- "${cmd[@]}")
  fi
  printf '%q ' env "$@" "${cmd[@]}" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  echo "== $name (limit ${limit}s): $(cat "$dir/cmd.txt")"
  local t0=$SECONDS
  timeout -k 10 "$limit" env "$@" "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"
  local rc=$?
  echo "$rc" > "$dir/exit_code"; echo $((SECONDS - t0)) > "$dir/wall_s"
  local errors
  errors=$(grep -ho 'ERROR SUMMARY: [0-9]* error' "$dir/stdout.txt" "$dir/stderr.txt" | tail -1 | grep -o '[0-9]*')
  local state
  state=$(python3 - "$dir/result.json" <<'PY' 2>/dev/null || echo "no result.json"
import json, sys
r = json.load(open(sys.argv[1]))
v = sum(len(c["violations"]) for c in r["cases"])
why = r.get("unavailable") or (r.get("error") or "").strip().splitlines()[-1:] or [""]
print(f"{'complete' if r['complete'] else 'INCOMPLETE'}, {len(r['cases'])} cases, {v} violations"
      + ("" if r["complete"] else f": {why if isinstance(why, str) else why[0]}"))
PY
)
  summary+=("$(printf '%-30s %-9s %5s %8s  %s' "$name" "$tool" "$rc" "${errors:--}" "$state (${SECONDS}s)")")
  tail -3 "$dir/stderr.txt" | sed 's/^/   stderr: /'
  if [ -s "$dir/run.xml" ] || [ "$probe" = narrow-matmul ]; then
    python3 tests/gpu/case_table.py "$dir" > "$dir/table.txt" 2>&1; cat "$dir/table.txt"
  fi
  for f in "$dir/run.xml" "$dir/stdout.txt"; do [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 1000000 ] && gzip "$f"; done
}

NO_CACHE=PYTORCH_NO_CUDA_MEMORY_CACHING=1
NS='[1,2,3,4,8,31,32,33,63,64,65,127,128]'
# 1. narrow-matmul under initcheck: one process, every n x {unguarded, guarded, torch}.
step narrow_initcheck 300 initcheck "$SAN" narrow-matmul \
  "{\"m\":32,\"k\":32,\"tile\":32,\"n\":$NS,\"variants\":[\"unguarded\",\"guarded\",\"torch\"]}" $NO_CACHE
# 2. k and m above the tile: each thread reads several unwritten floats at one pc (tests the one-record-per-read model).
step narrow_multiread_initcheck 180 initcheck "$SAN" narrow-matmul \
  '{"m":64,"k":64,"tile":32,"n":[1,33,64],"variants":["unguarded","guarded"]}'
# 3. bf16 classification, bare (its verdict reads the timing): a shape large enough to time on the GPU; CPU at 256.
step bf16_bare 120 none "$SAN" bf16-matmul '{"backends":["torch-cuda","pycuda"],"m":4096,"k":4096,"n":4096}'
step bf16_cpu_bare 60 none "$SAN" bf16-matmul '{"backends":["torch-cpu"]}'
# 4. determinism, N=8 fresh processes, no shared cache.
step determinism_bare 240 none "$SAN" determinism \
  '{"device":"cuda","processes":8,"ops":["matmul","index_add","triton-splitk"],"timeout_s":120}'
# 5. throughput, bare.
step throughput_bare 120 none "$SAN" matmul-throughput '{}'
# 6. determinism with one shared on-disk autotune cache.
step determinism_shared_cache 180 none "$SAN" determinism \
  '{"device":"cuda","processes":8,"ops":["triton-splitk"],"autotune_cache":"shared","timeout_s":120}'
# 7. gradcheck on CUDA.
step gradcheck_cuda 60 none "$SAN" gradcheck '{"device":"cuda"}'
# 8. command probe on a CUDA program of our own: planted OOB write (memcheck), planted race (racecheck).
if nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu; then
  CMD_ENV=(CUPROBE_COMMAND_ENABLED=1 CUPROBE_COMMAND_ALLOWLIST=/tmp/harness)
  step command_oob_memcheck 60 memcheck "$SAN" command '{"argv":["/tmp/harness","oob"]}' "${CMD_ENV[@]}"
  step command_race_racecheck 60 racecheck "$SAN" command '{"argv":["/tmp/harness","race"]}' "${CMD_ENV[@]}"
else
  summary+=("command_*: skipped, harness build failed")
fi
# 9. bf16 under a sanitizer: the verdict must fall back to bits only (correlated).
step bf16_initcheck 120 initcheck "$SAN" bf16-matmul '{"backends":["torch-cuda"]}' $NO_CACHE
# 10. the other sanitizer version on the main narrow-matmul batch.
if [ -n "$SAN2" ]; then
  step narrow_initcheck_san2 300 initcheck "$SAN2" narrow-matmul \
    "{\"m\":32,\"k\":32,\"tile\":32,\"n\":$NS,\"variants\":[\"unguarded\",\"guarded\",\"torch\"]}" $NO_CACHE
fi

tar -C "$work" -czf "$OUT/probes_catalog.tgz" . && ls -la "$OUT"
{
  echo "== summary (exit: 86 = sanitizer found errors, 69 = unavailable, 2 = refused/bad params; errors = ERROR SUMMARY)"
  printf '%-30s %-9s %5s %8s  %s\n' step tool exit errors result
  printf '%s\n' "${summary[@]}"
} | tee "$OUT/summary.txt"
