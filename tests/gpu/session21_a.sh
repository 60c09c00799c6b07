#!/usr/bin/env bash
# Session 21: the defaults against the confirmation off, with the primary context held for a process's life (the
# change session 20 measured only against the commit before, on an H100), after session 19's capture of
# --dump-kernel-launches (the 2026.4 sanitizer could be packed this time) and session 18's pasted sanitizer line.
# 1. session19_b.sh and session18_c.sh (short; first, so that a call cut short still brings them back).
# 2. bench/sweep.py --full --slots 8 --no-cold, alternating the defaults and CUPROBE_CONFIRM=0 (who goes first
#    swapping each round) until AB_DEADLINE_S (default 300) after the script's start. Predicted: the defaults
#    135,000-160,000 cases per GPU-hour (median about 145,000), the confirmation off 170,000-210,000 (median about
#    185,000): the re-runs still cost about 1.5 s of a 10 s sweep, as 4 more contexts on the GPU for their 3 s;
#    every finding benign and the control right where the confirmation is on.
# 3. While DEADLINE_S (default 520) has not passed: tests/gpu/core.sh.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session21_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
echo "== $(date -u +%T) commit $(git log --oneline -1 | cut -c1-60) (the box's .git; the tree copied over it is newer)"
left() { [ $(( $(date +%s) - began )) -lt ${DEADLINE_S:-520} ] || { echo "== no time left for $1"; return 1; }; }
echo "== session19_b ($(date -u +%T))"
left session19_b && OUT=$OUT timeout 90 bash tests/gpu/session19_b.sh
echo "== session18_c ($(date -u +%T))"
left session18_c && { mkdir -p /tmp/s18c; OUT=/tmp/s18c timeout 60 bash tests/gpu/session18_c.sh; tar czf "$OUT/s18c.tgz" -C /tmp/s18c .; }
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
for round in 1 2 3 4 5 6 7 8 9 10; do
  order="defaults off"; [ $((round % 2)) = 0 ] && order="off defaults"  # round 1 compiles the kernels
  for setting in $order; do
    [ $(( $(date +%s) - began )) -gt ${AB_DEADLINE_S:-300} ] && break 2
    confirm=1; [ $setting = off ] && confirm=0
    t=$(date +%s.%N)
    CUPROBE_CONFIRM=$confirm timeout 90 python3 bench/sweep.py --skip-compare --full --slots 8 --no-cold \
      --out /tmp/bench > /tmp/bench.txt 2>&1
    rc=$?
    { echo "=== round $round $setting rc=$rc"; cat /tmp/bench.txt; } >> "$OUT/ab.log"
    row=$(grep -E "^ +8 +ready" /tmp/bench.txt | awk '{print $5, $6}')
    echo "round $round $setting rc=$rc wall,cases/h: $row"
    grep -E "slowest process|confirmations|re-runs, s before" /tmp/bench.txt | sed 's/^ *//' | cut -c1-330
    python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)" | head -1 | cut -c1-100
    rm -rf /tmp/bench
  done
done
kill $sampler
echo "== core ($(date -u +%T))"
left core && { OUT=$OUT timeout 300 bash tests/gpu/core.sh > /dev/null 2>&1; grep -E "passed|failed|exit=|predicted" "$OUT/core.log"; }
echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
