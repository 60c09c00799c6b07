#!/usr/bin/env bash
# On a GPU machine, from the project root (cuprobe and its gpu extra installed):  bash tests/gpu/house.sh
#  1. GPU discovery (service/probing/gpus.py) against CUDA itself: for each CUDA_VISIBLE_DEVICES setting, the
#     devices cuprobe says CUDA sees (NVML, else nvidia-smi) and the UUIDs CUDA's driver API reports
#     (probes.gpu.cuda_devices) must be the same list; printed side by side, FAIL on a mismatch.
#  2. `cuprobe check` (README command 1) through the embedded service: every GPU probe runs on the GPU worker;
#     no `unavailable` row except the `command` probe, which is off by default.
# Writes $OUT/house/: house.log, check.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; out="$OUT/house"; mkdir -p "$out"
exec > >(tee -a "$out/house.log") 2>&1
export PYTHONUNBUFFERED=1
step() { echo; echo "== $(date -u +%T) $*"; }
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=index,uuid,name,driver_version --format=csv,noheader
python3 -c "import pynvml; print('nvidia-ml-py', pynvml.__file__)" || echo "nvidia-ml-py missing: the nvidia-smi path is tested"
fail=0

step "1. CUDA_VISIBLE_DEVICES: cuprobe's discovery vs CUDA"
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
for setting in UNSET "" 0 "0,7" "7,0" "-1" "$uuid" "${uuid:0:12}" "${uuid#GPU-}" "0,0" "0,MIG-x"; do
  if [ "$setting" = UNSET ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES="$setting"; fi
  python3 - "$setting" <<'PY' || fail=1
import sys
from cuprobe.probes.gpu import cuda_devices
from cuprobe.service.probing.gpus import inventory, visible_gpus
ours = [d.uuid for d in visible_gpus()]
cuda = cuda_devices()["uuids"]
print(f"{sys.argv[1]!r:>48}  cuprobe {ours}  CUDA {cuda}  source {'nvml' if inventory().driver else '?'}")
if ours != cuda:
    print("FAIL: cuprobe and CUDA disagree")
    sys.exit(1)
PY
done
unset CUDA_VISIBLE_DEVICES

step "2. cuprobe check through the embedded service"
timeout 560 python3 -m cuprobe.service.cli check --timeout 300 > "$out/check.txt" 2>&1
echo "check rc=$?"
cat "$out/check.txt"
if grep -q "could not run here (unavailable)" "$out/check.txt"; then  # command is "not run", never unavailable
  echo "FAIL: a probe other than command ended unavailable on a GPU machine"; fail=1
fi
echo "house.sh: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
