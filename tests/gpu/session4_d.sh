#!/usr/bin/env bash
# One short GPU call: replay's digest overhead on the GPU and A1/A2 (replay.sh without the steps shown before), then
# the 384-case grid at K = 4 and 8 with the watcher (slots_hang.sh), after the port leases and the extension fix.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session4_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$SECONDS
OUT="$OUT" HARD_S=165 SKIP="digests_cuda overhead_cpu index_add index_add_deterministic splitk_cache_ok" \
  timeout -k 5 175 bash tests/gpu/replay.sh > /dev/null 2>&1
echo "replay.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS; OUT="$OUT" timeout -k 5 75 bash tests/gpu/slots_hang.sh 65 4,8 > /dev/null 2>&1
echo "slots_hang.sh rc=$? after $((SECONDS - t0)) s"
rm -f "$OUT/slots_hang/slot-dirs.tgz"
