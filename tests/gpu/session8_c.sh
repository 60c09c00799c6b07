#!/usr/bin/env bash
# Session 8, third GPU call: replay's digests through the Triton kernel (probes/replay/triton.py). (1) the digest
# tests on CUDA: the kernel against the documented function, and the batched tape against the per-tensor one;
# (2) the core's uninit-read initcheck test as corrected (the confirmer's control records counted); (3) bench/replay.py
# twice (the kernel and the staging path side by side in each run) and replay_profile.py with output_grads none.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -c "import triton; print('triton', triton.__version__)"
echo "== digest tests on CUDA $(date -u +%T)"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/unit/probes/test_replay_triton.py \
  tests/unit/probes/test_replay_digest.py -rA 2>&1 | tail -25 | tee "$OUT/digest-tests.txt"
echo "== core uninit-read initcheck $(date -u +%T)"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_core_gpu.py -m gpu -k uninit_read_initcheck \
  2>&1 | tail -5 | tee "$OUT/core-uninit.txt"
for i in 1 2; do
  echo "== replay overhead, run $i $(date -u +%T)"
  timeout 120 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead-$i.txt" 2>&1
  echo "rc=$?"; cat "$OUT/replay-overhead-$i.txt"
done
echo "== replay profile, output_grads none $(date -u +%T)"
timeout 90 python3 tests/gpu/replay_profile.py --device cuda --steps 40 --output-grads none \
  > "$OUT/replay-profile-none.txt" 2>&1
echo "rc=$?"; head -9 "$OUT/replay-profile-none.txt"
echo "== done $(date -u +%T)"
