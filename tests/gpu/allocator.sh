#!/usr/bin/env bash
# torch's caching allocator made visible to the sanitizer (NVTX), on the GPU box: docs/allocator.md's measured tables.
# Run from the project root there:  bash tests/gpu/allocator.sh
# Writes under $OUT: allocator.log (this console), build.json (extension build time, fresh then cached),
# trace/real_trace.json + trace/real_trace.nvtx.log (commit both to tests/data/allocator/), runs/NAME.json
# (one `cuprobe run --json` RunResult each) with runs/NAME/ (run.xml, stdout, stderr, result.json) tarred
# into allocator-runs.tgz, and tables.md (the measured tables, from tests/gpu/allocator_table.py).
# Steps run in priority order; a step that would start after HARD_S seconds is skipped and says so.
set -u
OUT=${OUT:-/tmp/out}
HARD_S=${HARD_S:-230}
work=/tmp/allocator_gpu; rm -rf "$work"; mkdir -p "$work/runs" "$OUT"
exec > >(tee "$OUT/allocator.log") 2>&1
export PYTHONUNBUFFERED=1
export CUPROBE_EXTENSION_DIR="$work/extensions"  # empty: the first load builds, and is timed
export CUPROBE_DATA_DIR="$work/data"
export CUPROBE_SHOW_BACKTRACE=device  # host backtraces are most of initcheck's cost per record

echo "== banner"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
nvcc --version | tail -2
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
command -v ninja && ninja --version || echo "ninja: not on PATH (torch.utils.cpp_extension.load needs it)"
sanitizers=()
for s in /tmp/site/nvidia/cu13/bin/compute-sanitizer /usr/local/cuda/bin/compute-sanitizer; do
  [ -x "$s" ] && sanitizers+=("$s") && echo "sanitizer $s: $("$s" --version | tail -1)"
done
export CUPROBE_SANITIZER_PATH=${sanitizers[0]:-compute-sanitizer}
SAN2=${sanitizers[1]:-}

left() { echo $((HARD_S - SECONDS)); }

echo "== 1. build the extension (fresh cache), then load it again (cached)"
python3 - <<'PY' | tee "$OUT/build.json"
import json, time
from cuprobe.kernels import extension
rows = []
for attempt in ("fresh", "cached"):
    t0 = time.perf_counter()
    try:
        ext = extension.load()
        rows.append({"attempt": attempt, "cached": ext.cached, "build_s": ext.build_s,
                     "wall_s": round(time.perf_counter() - t0, 3), "library": str(ext.path)})
    except extension.ExtensionUnavailable as exc:
        rows.append({"attempt": attempt, "error": str(exc)})
print(json.dumps(rows, indent=1))
PY

echo "== 2. a real allocator trace, with the extension's call log; the Python twin checked against it"
timeout -k 5 90 python3 tests/gpu/record_allocator_trace.py "$OUT/trace"; echo "record_allocator_trace exit $?"

# run NAME LIMIT PROBE TOOL [--param k=v ...]: one `cuprobe run` through the runner (the service's own path).
run() {
  local name=$1 limit=$2 probe=$3 tool=$4; shift 4
  if (( $(left) < 20 )); then echo "== $name: skipped, time budget spent"; return; fi
  (( limit > $(left) )) && limit=$(left)
  echo "== $name (limit ${limit}s): $probe --tool $tool $*"
  timeout -k 5 "$limit" python3 -m cuprobe.service.cli run "$probe" --tool "$tool" "$@" --timeout "$limit" \
    --workdir "$work/runs/$name" --json > "$work/runs/$name.json" 2> "$work/runs/$name.stderr"
  echo "   exit $?; $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["probe_context"]; print(r["outcome"], "|", r["message"][:160], "|", r["duration_s"], "s |", c.get("allocator"), c.get("allocator_fallback", ""), "| nvtx:", c.get("allocator_nvtx_counts"))' "$work/runs/$name.json" 2>&1 | tail -1)"
}

echo "== 3. planted defects under each allocator"
for alloc in caching-nvtx no-caching caching; do
  run "planted_${alloc}_memcheck" 60 planted-torch memcheck --param allocator=$alloc
  run "planted_${alloc}_initcheck" 60 planted-torch initcheck --param allocator=$alloc
done
if [ -n "$SAN2" ]; then
  for tool in memcheck initcheck; do
    CUPROBE_SANITIZER_PATH=$SAN2 run "san2_planted_caching-nvtx_$tool" 60 planted-torch $tool --param allocator=caching-nvtx
  done
fi

echo "== 4. the catalog's torch probes, caching-nvtx against no-caching"
NS='[1,2,3,4,8,31,32,33,63,64,65,127,128]'
for alloc in caching-nvtx no-caching; do
  run "catalog_narrow_torch_initcheck_$alloc" 60 narrow-matmul initcheck \
    --param "n=$NS" --param 'variants=["torch"]' --param allocator=$alloc
  run "catalog_narrow_torch_memcheck_$alloc" 60 narrow-matmul memcheck \
    --param "n=$NS" --param 'variants=["torch"]' --param allocator=$alloc
  run "catalog_bf16_initcheck_$alloc" 60 bf16-matmul initcheck \
    --param 'backends=["torch-cuda"]' --param m=64 --param k=64 --param n=64 --param allocator=$alloc
done
for alloc in caching-nvtx no-caching; do
  run "catalog_determinism_$alloc" 90 determinism none \
    --param device=cuda --param processes=4 --param 'ops=["matmul","index_add"]' --param allocator=$alloc
done

python3 tests/gpu/allocator_table.py "$work/runs" | tee "$OUT/tables.md"
tar -C "$work" -czf "$OUT/allocator-runs.tgz" runs && ls -la "$OUT"
echo "== done in ${SECONDS}s"
