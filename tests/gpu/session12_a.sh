#!/usr/bin/env bash
# For the next session with device time (written in session 11, 2026-12-04, not run): the confirmation's re-runs
# narrowed to the flagged cases (CUPROBE_CONFIRM_FLAGGED_ONLY=1, docs/confirmation.md "Only the flagged cases").
# (1) its verdicts on narrow-matmul (tests/gpu/confirm.sh's narrow_unguarded step: 10 benign expected, the
#     confirmer's control right), and uninit-read's (consequential);
# (2) bench/sweep.py's 384-case grid at K = 4 and K = 8, the default confirmation against flagged-only, alternating,
#     cold and with spares ready; per-case findings must equal K = 1's in every run (the bench checks).
# Predicted: K = 8 flagged-only about 10-11 s with spares (125,000-140,000 cases per GPU-hour), the default
# 23.7-24.9 s. CPU sampled throughout. About 6 minutes.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session12_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
nproc; uptime
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
echo "== verdicts, flagged only $(date -u +%T)"
CUPROBE_CONFIRM_FLAGGED_ONLY=1 OUT=$OUT/confirm SKIP="bf16_matmul a3_uncached a3_caching planted_memcheck planted_racecheck planted_synccheck" \
  HARD_S=150 bash tests/gpu/confirm.sh > /dev/null 2>&1
tail -30 "$OUT/confirm/confirm.log" 2>/dev/null
tar czf "$OUT/confirm.tar.gz" -C "$OUT" confirm && rm -rf "$OUT/confirm"
for k in 4 8; do
  for only in 1 0; do
    echo "== 384-case K = $k, flagged only = $only $(date -u +%T)"
    t=$(date +%s.%N)
    CUPROBE_GPU_SLOTS=$k CUPROBE_CONFIRM_FLAGGED_ONLY=$only timeout 150 python3 bench/sweep.py --skip-compare --full \
      --slots $k --out "$OUT/bench" > "$OUT/k$k-only$only.txt" 2> "$OUT/k$k-only$only.err"
    echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$OUT/k$k-only$only.txt"
    echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
    rm -rf "$OUT/bench"
  done
done
kill $sampler
echo "== done $(date -u +%T)"
