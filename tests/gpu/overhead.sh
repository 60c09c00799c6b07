#!/usr/bin/env bash
# What the service adds per job on a GPU machine, side by side with the bare command in one run each
# (bench/overhead.py, docs/service.md "Overhead"): uninit-read under initcheck, 15 repeats, the service waited on
# by a held GET (as `cuprobe submit --wait` waits) and by polling every 20 ms; then the CPU probe this repository's
# CPU-only machines measure (selftest, bare), for comparison. Each bench starts its own embedded stack
# (`cuprobe up`: Valkey, SQLite, one worker per GPU plus the CPU worker, the API) in a temporary directory.
# From the project root on the box (about 2 minutes):
#   source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/overhead.sh
# Writes to $OUT/overhead/: overhead.log (everything, in order) and one JSON of measurements per bench.
set -uo pipefail
OUT=${OUT:-/tmp/out}; out="$OUT/overhead"; mkdir -p "$out"
exec > >(tee -a "$out/overhead.log") 2>&1
export PYTHONUNBUFFERED=1
step() { echo; echo "== $(date -u +%T) $*"; }
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader

step "bench/overhead.py --probe uninit-read --tool initcheck --repeats 15 --clients held,poll (target: median ratio <= 1.05)"
timeout 150 python3 bench/overhead.py --probe uninit-read --tool initcheck --repeats 15 --clients held,poll \
  --json-out "$out/overhead-uninit-read.json"; echo "exit=$?"

step "bench/overhead.py --probe selftest --tool none --repeats 15 --clients held,poll (the CPU machines' probe)"
timeout 60 python3 bench/overhead.py --probe selftest --tool none --repeats 15 --clients held,poll \
  --json-out "$out/overhead-selftest.json"; echo "exit=$?"

step "done"
ls -la "$out"
