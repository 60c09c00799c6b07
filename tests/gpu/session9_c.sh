#!/usr/bin/env bash
# Session 9, third GPU call: (1) why a bare re-run compiled torch from source (is bytecode written or read here?);
# (2) one bare re-run alone and 4 and 16 at once, now in cuprobe's probe environment (bytecode in its cache);
# (3) bench/sweep.py's 48-case comparison at K = 1, 2, 4, 8 (compute-sanitizer 2025.3.1.0, watchdog 30 s).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session9_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== bytecode $(date -u +%T)"
env | grep '^PYTHON' | sort
python3 - <<'PY'
import os, sys, torch
d = os.path.dirname(torch.__file__)
print("dont_write_bytecode", sys.flags.dont_write_bytecode, "pycache_prefix", sys.pycache_prefix)
print("torch dir", d, "writable", os.access(d, os.W_OK), "__pycache__ there", os.path.isdir(os.path.join(d, "__pycache__")))
PY
echo "== bare re-runs $(date -u +%T)"
timeout 90 python3 tests/gpu/bare_profile.py --timings-only 2>&1 | tee "$OUT/bare-timings.txt"
echo "== bench/sweep.py 48-case $(date -u +%T)"
CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30 timeout 400 \
  python3 bench/sweep.py --slots 1,2,4,8 --out "$OUT/bench" > "$OUT/sweep48.txt" 2> "$OUT/sweep48.err"
echo "rc=$?"; cat "$OUT/sweep48.txt"
rm -rf "$OUT/bench"
echo "== done $(date -u +%T)"
