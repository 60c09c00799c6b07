#!/usr/bin/env bash
# The confirmation's early re-runs without the cases that import torch (the default since session 19), against the
# early re-runs of every case (CUPROBE_CONFIRM_TORCH_EARLY=1, the earlier default) and the confirmation off, on the
# H200: bench/sweep.py --full --slots 8 --no-cold, rounds alternating the three, each 384-case row followed by the
# confirmations, the re-runs' split and the CPU seconds of the round. Predicted: the re-runs' slowest case is no
# longer guarded-n127 at 1.7-2.5 s (torch's import); each early re-run ends about 2 s sooner; the sweep uses about
# 8 CPU s less; the defaults' median between the earlier defaults' (about 130,000 cases per GPU-hour) and the
# confirmation off's (about 180,000), at or above 150,000 in most rounds; every unguarded finding benign and the
# confirmer's control right in every process, in both confirming settings (the torch cases hold no finding, so no
# re-run follows the sanitizer run). From the project root on the GPU box:
#   OUT=/tmp/out bash tests/gpu/session19_a.sh
# BUDGET_S (default 500) is the time after which no new round starts; a round takes up to 90 s more.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
git log --oneline -1 > "$OUT/commit.txt" 2>/dev/null
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for round in 1 2 3 4; do
  for setting in default torch-early off; do
    [ $(( $(date +%s) - began )) -gt ${BUDGET_S:-500} ] && break 2
    confirm=1; [ $setting = off ] && confirm=0
    early=0; [ $setting = torch-early ] && early=1
    t=$(date +%s.%N)
    CUPROBE_CONFIRM=$confirm CUPROBE_CONFIRM_TORCH_EARLY=$early timeout 90 python3 bench/sweep.py --skip-compare \
      --full --slots 8 --no-cold --out /tmp/bench > "/tmp/bench.txt" 2>/dev/null
    rc=$?
    row=$(grep -E "^ +8 +ready" /tmp/bench.txt | awk '{print $5, $6}')
    echo "round $round $setting rc=$rc wall,cases/h: $row"
    grep -E "slowest process|confirmations|re-runs" /tmp/bench.txt | sed 's/^ *//' | cut -c1-400
    python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)" | head -1 | cut -c1-120
    rm -rf /tmp/bench
  done
done
kill $sampler
echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
