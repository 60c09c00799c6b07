#!/usr/bin/env bash
# Raw compute-sanitizer output on code nobody here wrote: NVIDIA's compute-sanitizer-samples, built with their
# own Makefiles and run under each tool with both sanitizers, plus each sanitizer's --help text and the
# environment a command's child sees under the sanitizer. From the project root on a GPU machine, with the
# samples checked out in .samples/ (git clone https://github.com/NVIDIA/compute-sanitizer-samples .samples):
#   bash tests/gpu/samples_capture.sh
# Writes $OUT/samples.log and $OUT/samples.tgz (one folder per case: cmd.txt, stdout.txt, stderr.txt, exit_code,
# run.xml), the layout of tests/data/captures.
set -u
OUT=${OUT:-/tmp/out}; keep=/tmp/samples-keep; rm -rf "$keep"; mkdir -p "$keep" "$OUT"
exec > >(tee -a "$OUT/samples.log") 2>&1
SAMPLES=${SAMPLES:-$PWD/.samples}
build=/tmp/samples-build; rm -rf "$build"; cp -r "$SAMPLES" "$build"
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader
nvcc --version | tail -2
for d in Memcheck Racecheck Synccheck Initcheck Suppressions; do
  (cd "$build/$d" && make -s CUDA_PATH=/usr/local/cuda COMPILE_FLAGS="-MMD -lineinfo" >/dev/null 2>&1; echo "built $d: $(ls -1 | grep -v '\.' | tr '\n' ' ')")
done
echo "== nvtx headers: $(ls /usr/local/cuda/include/nvtx3/ 2>/dev/null | tr '\n' ' ')"

# case NAME SANITIZER DIR ARGS... : one capture folder, as tests/data/captures
case_() {
  local name=$1 san=$2 dir=$3; shift 3
  local v; v=$("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p')
  local c="$keep/$v/$name"; mkdir -p "$c"
  echo "$san $* " > "$c/cmd.txt"
  (cd "$build/$dir" && timeout 120 "$san" --xml --save "$c/run.xml" --print-limit 0 "$@" >"$c/stdout.txt" 2>"$c/stderr.txt"; echo $? > "$c/exit_code")
  echo "-- $v $name exit=$(cat "$c/exit_code") $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|LEAK SUMMARY' "$c/stdout.txt" "$c/stderr.txt" | tr '\n' ' ')"
}
for san in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer; do
  [ -x "$san" ] || continue
  v=$("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p'); mkdir -p "$keep/$v"
  "$san" --version > "$keep/$v/version.txt"
  "$san" --help > "$keep/$v/help.txt" 2>&1
  echo "== compute-sanitizer $v"
  case_ sample_memcheck_demo "$san" Memcheck --tool memcheck --destroy-on-device-error kernel ./memcheck_demo
  case_ sample_memcheck_demo_leak "$san" Memcheck --tool memcheck --destroy-on-device-error kernel --leak-check full ./memcheck_demo
  case_ sample_block_error_analysis "$san" Racecheck --tool racecheck --racecheck-report analysis ./block_error
  case_ sample_block_error_hazard "$san" Racecheck --tool racecheck --racecheck-report hazard ./block_error
  case_ sample_warp_error_hazard "$san" Racecheck --tool racecheck --racecheck-report hazard ./warp_error
  case_ sample_divergent_threads "$san" Synccheck --tool synccheck ./divergent_threads
  case_ sample_illegal_syncwarp "$san" Synccheck --tool synccheck ./illegal_syncwarp
  case_ sample_memset_error "$san" Initcheck --tool initcheck ./memset_error
  case_ sample_suppressions_memcheck "$san" Suppressions --tool memcheck ./suppressions_demo
  cp "$keep/$v/sample_suppressions_memcheck/run.xml" "$build/Suppressions/supp-memcheck-$v.xml"
  case_ sample_suppressions_memcheck_supp "$san" Suppressions --tool memcheck --suppressions "supp-memcheck-$v.xml" ./suppressions_demo
  case_ sample_suppressions_initcheck "$san" Suppressions --tool initcheck ./suppressions_initcheck_demo
  cp "$keep/$v/sample_suppressions_initcheck/run.xml" "$build/Suppressions/supp-initcheck-$v.xml"
  case_ sample_suppressions_initcheck_supp "$san" Suppressions --tool initcheck --suppressions "supp-initcheck-$v.xml" ./suppressions_initcheck_demo
  # What a command's child sees under the sanitizer: the variables it injects must survive an allowlisted env.
  env | sort > "$keep/$v/env-bare.txt"
  (cd "$build/Memcheck" && "$san" --tool memcheck sh -c 'env | sort > '"$keep/$v/env-child.txt"'; ./memcheck_demo > /dev/null 2>&1' > /dev/null 2>&1)
  (cd "$build/Memcheck" && env -i PATH=/usr/bin:/bin "$san" --tool memcheck sh -c 'env | sort > '"$keep/$v/env-child-minimal.txt"'; ./memcheck_demo' > "$keep/$v/env-minimal-memcheck.txt" 2>&1; echo "exit=$?" >> "$keep/$v/env-minimal-memcheck.txt")
  echo "-- child env: $(wc -l < "$keep/$v/env-child.txt") vars, injected: $(comm -13 "$keep/$v/env-bare.txt" "$keep/$v/env-child.txt" | cut -d= -f1 | tr '\n' ' ')"
  echo "-- minimal env run: $(grep -h 'ERROR SUMMARY\|exit=' "$keep/$v/env-minimal-memcheck.txt" | tr '\n' ' ')"
done
# What the box offers for the allocator extension and GPU discovery.
tinc=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
mkdir -p "$keep/box"; cp "$tinc/c10/cuda/CUDACachingAllocator.h" "$keep/box/" 2>/dev/null
ls /usr/local/cuda/include/nvtx3 "$tinc/nvtx3" > "$keep/box/nvtx3-ls.txt" 2>&1
python3 -c 'import pynvml; print("pynvml", pynvml.__file__)' > "$keep/box/pynvml.txt" 2>&1
{ nproc; free -g; nvidia-smi; pip list 2>/dev/null; } > "$keep/box/host.txt" 2>&1
echo "== attachAllocatorTraceTracker: $(grep -c attachAllocatorTraceTracker "$keep/box/CUDACachingAllocator.h" 2>/dev/null)"
tar -C "$keep" -czf "$OUT/samples.tgz" .
ls -la "$OUT"
