#!/usr/bin/env bash
# Session 8, fifth and sixth GPU calls: the Triton digest reads every tensor of the step (a flat copy of non-contiguous ones, as the
# staging path does) and reports which path each batch took. (1) the digest tests on CUDA; (2) tests/gpu/replay_split.py
# (where the digest's host time goes), output_grads none and retain; (3) bench/replay.py twice.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session8_e.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
echo "== digest tests on CUDA $(date -u +%T)"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/unit/probes/test_replay_triton.py \
  tests/unit/probes/test_replay_digest.py 2>&1 | tail -4 | tee "$OUT/digest-tests.txt"
for a in "--output-grads none" "--output-grads none --staging" "--output-grads retain"; do
  echo "== replay_split $a $(date -u +%T)"
  timeout 60 python3 tests/gpu/replay_split.py --steps 60 $a
done 2>&1 | tee "$OUT/replay-split.txt"
for i in 1 2; do
  echo "== replay overhead, run $i $(date -u +%T)"
  timeout 120 python3 bench/replay.py --device cuda --steps 20 --rounds 5 > "$OUT/replay-overhead-$i.txt" 2>&1
  echo "rc=$?"; cat "$OUT/replay-overhead-$i.txt"
done
echo "== done $(date -u +%T)"
