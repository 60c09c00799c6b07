#!/usr/bin/env bash
# Whether a compute-sanitizer option makes initcheck's records cheaper without changing cuprobe's findings
# (tests/gpu/record_options.py: a quarter of the grid's unguarded cases, about 15,900 records, run directly under
# compute-sanitizer with the sweep's options and each candidate added, two rounds). Predicted (session 13): the
# sweep's options about 8-9 s; --demangle no and --num-callers-device 1 within 5 % of it (the kernel is extern "C"
# and one frame deep); --nvtx no and --check-api-memory-access no within 5 % too. About 2 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
nproc; uptime; which perf py-spy 2>/dev/null
echo "== record_options.py $(date -u +%T)"
timeout 400 python3 tests/gpu/record_options.py --rounds 2 > "$OUT/options.txt" 2> "$OUT/options.err"
echo "rc=$?"; cat "$OUT/options.txt"; tail -5 "$OUT/options.err"
echo "== done $(date -u +%T)"
