#!/usr/bin/env bash
# What K record-heavy sanitizer processes wait on (tests/gpu/record_contention.py): the grid's unguarded cases
# (about 63,500 uninitialized reads) split over K = 1, 2, 4, 8 processes at once, each K free and with every process
# on a physical core of its own; the guarded cases (same launches, no records) the same way; the GPU's utilization
# sampled throughout; the CPU topology printed. Predicted (session 13): K = 1 about 30 s, K = 8 about 8 s (3.7x);
# the GPU busy under 30 % at K = 1 and under 60 % at K = 8 (the records' cost is on the host); pinning no slower.
# About 4 minutes. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime; lscpu | grep -iE "model name|socket|core|thread|numa|MHz" ; nvidia-smi --query-gpu=name,compute_mode,mig.mode.current,clocks.sm --format=csv
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
echo "== record_contention.py $(date -u +%T)"; t=$(date +%s.%N)
timeout 480 python3 tests/gpu/record_contention.py --k 1,2,4,8 --pin --guarded > "$OUT/contention.txt" 2> "$OUT/contention.err"
echo "rc=$?"; cat "$OUT/contention.txt"
echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
kill $sampler
echo "== done $(date -u +%T)"
