#!/usr/bin/env bash
# The 48-case ratio against a baseline that confirms as when the goal was set (each of its 48 processes with its own
# four re-runs, CUPROBE_CONFIRM_SHARED=0), the batched rows sharing one set, in one run: bench/sweep.py
# --baseline-own-reruns at K = 4 and 8, cold and with spares. Session 11 measured that baseline at 138.5 s; the
# batched rows took 3.8-6.9 s in session 12's call 3. Predicted: baseline 130-140 s, K = 4 with spares about 4 s,
# 30-35x. About 4 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
echo "== warm-up: the kernels compiled once, so the baseline's first process does not pay for it $(date -u +%T)"
python3 -m cuprobe.probes narrow-matmul --params '{"n": [1], "tile": 32}' --out "$OUT/warm.json" --tool none > /dev/null 2>&1
echo "rc=$?"; rm -f "$OUT/warm.json"
echo "== bench/sweep.py --baseline-own-reruns --slots 4,8 $(date -u +%T)"
timeout 420 python3 bench/sweep.py --baseline-own-reruns --slots 4,8 --out "$OUT/bench" > "$OUT/ratio.txt" 2> "$OUT/ratio.err"
echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/ratio.txt"
python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv"
kill $sampler; rm -rf "$OUT/bench"
echo "== done $(date -u +%T)"
