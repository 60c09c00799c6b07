#!/usr/bin/env bash
# Where the ~9 s floor of K sanitizer processes started together comes from, without cuprobe in the way:
# K copies (KS, default 1 4 8) of the same process started at once, for
#   bare-torch      python3: import torch, one CUDA tensor (no sanitizer)
#   cs-cuda         compute-sanitizer --tool initcheck on a 20-line CUDA C program (no Python)
#   cs-pycuda       (PYCUDA_ROWS=1) compute-sanitizer --tool initcheck on python3: pycuda, one tiny kernel
#   cs-torch        compute-sanitizer --tool initcheck on the bare-torch program
# Prints each process's wall time (median, max) and the batch's wall time, so a floor shared by all processes
# (driver, sanitizer) and one that only torch or Python pays can be told apart.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/startup_floor.sh   (about 60 s)
set -uo pipefail
OUT=${OUT:-/tmp/out}; O="$OUT/startup_floor"; mkdir -p "$O"
exec > >(tee "$O/startup_floor.log") 2>&1
CS=${CS:-$(python3 -c 'from service.sanitizer.locate import find_sanitizer; print(find_sanitizer())' 2>/dev/null)}
echo "== sanitizer $CS: $("$CS" --version | tail -1); $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader)"
W=/tmp/startup-floor; mkdir -p "$W"
cat > "$W/tiny.cu" <<'CU'
#include <cstdio>
__global__ void fill(float *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = i; }
int main() {
  float *p; cudaMalloc(&p, 1024 * sizeof(float)); fill<<<4, 256>>>(p, 1024);
  cudaError_t e = cudaDeviceSynchronize(); cudaFree(p); printf("%s\n", cudaGetErrorString(e)); return e != cudaSuccess;
}
CU
nvcc -o "$W/tiny" "$W/tiny.cu" -arch=sm_90 || echo "nvcc failed: cs-cuda rows will fail"
cat > "$W/torch_one.py" <<'PY'
import torch
x = torch.ones(1024, device="cuda"); torch.cuda.synchronize(); print(float(x.sum()))
PY
cat > "$W/pycuda_one.py" <<'PY'
import numpy as np, pycuda.autoinit, pycuda.driver as drv
from pycuda.compiler import SourceModule
f = SourceModule("__global__ void fill(float *p) { p[threadIdx.x] = threadIdx.x; }").get_function("fill")
a = np.zeros(256, np.float32); f(drv.Out(a), block=(256, 1, 1)); print(a.sum())
PY
[ -n "${PYCUDA_ROWS:-}" ] && python3 "$W/pycuda_one.py" > /dev/null  # warm pycuda's compile cache
batch() {  # NAME K CMD...: start K copies at once; per-process and batch wall times
  local name=$1 k=$2; shift 2
  local t0=$EPOCHREALTIME pids=()
  for i in $(seq "$k"); do
    ( s=$EPOCHREALTIME; "$@" > "$W/$name-$k-$i.out" 2>&1; rc=$?
      echo "$s $EPOCHREALTIME $rc" > "$W/$name-$k-$i.t" ) &
    pids+=($!)
  done
  wait "${pids[@]}"  # not a bare `wait`: that also waits for the `tee` of this script's own output, forever
  python3 - "$W" "$name" "$k" "$t0" "$EPOCHREALTIME" <<'PY'
import glob, statistics, sys
w, name, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
total = float(sys.argv[5]) - float(sys.argv[4])
rows = [open(p).read().split() for p in glob.glob(f"{w}/{name}-{k}-*.t")]
ts = sorted(float(r[1]) - float(r[0]) for r in rows); bad = sum(r[2] != "0" for r in rows)
print(f"{name:<10} K={k:<2} per process median {statistics.median(ts):6.2f} s  max {ts[-1]:6.2f} s   "
      f"batch {total:6.2f} s   {k / total * 3600:8.0f} processes/h   failed {bad}")
PY
}
KS=${KS:-1 4 8}
for k in $KS; do batch bare-torch "$k" python3 "$W/torch_one.py"; done
for k in $KS; do batch cs-cuda "$k" "$CS" --tool initcheck "$W/tiny"; done
for k in $KS; do batch cs-torch "$k" "$CS" --tool initcheck python3 "$W/torch_one.py"; done
[ -n "${PYCUDA_ROWS:-}" ] && for k in $KS; do batch cs-pycuda "$k" "$CS" --tool initcheck python3 "$W/pycuda_one.py"; done
tail -3 "$W"/cs-torch-8-1.out
