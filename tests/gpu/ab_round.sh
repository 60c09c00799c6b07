# Sourced by the A/B scripts (tests/gpu/session22_b.sh, session22_c.sh, session23_a.sh, session23_b.sh,
# session23_c.sh, session24_a.sh). Sourcing it starts the run: $OUT made, the environment every round runs in, the
# clock (`began`, which `ab_done` reads) and a start line. Then `ab_round`: one round of one setting of bench/sweep.py
# on the 384-case grid at K = 8 (AB_SLOTS) with spares ready, its whole output appended to $OUT/ab.log and its row and where its
# time went printed.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
began=$(date +%s)
echo "== $(date -u +%T) start"

# The run's last line: when it ended and how long it took.
ab_done() {
  echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
}

#   ab_round ROUND SETTING [NAME=VALUE ...] [-- BENCH FLAGS ...]
ab_round() {
  local round=$1 setting=$2 rc row; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  env "${envs[@]}" timeout 90 python3 bench/sweep.py --skip-compare --full --slots "${AB_SLOTS:-8}" --no-cold "$@" \
    --out /tmp/bench > /tmp/bench.txt 2>&1
  rc=$?
  { echo "=== round $round $setting rc=$rc"; cat /tmp/bench.txt; } >> "$OUT/ab.log"
  row=$(grep -E "^ +${AB_SLOTS:-8} +ready" /tmp/bench.txt | awk '{print $5, $6}')
  echo "round $round $setting rc=$rc wall,cases/h: $row"
  grep -E "slowest process|its run stage|the exit|NOT RUN|confirmations|re-runs, s before|re-runs ready|idle re-run" /tmp/bench.txt | sed 's/^ *//' | cut -c1-700
  rm -rf /tmp/bench
}

# Rounds of the settings named, which goes first rotating each round, each run by the caller's
# `ab_setting ROUND SETTING` (an ab_round with that setting's environment and flags), until AB_DEADLINE_S (default
# DEFAULT) seconds have passed since the call or 20 rounds have run.
#   ab_rounds DEFAULT SETTING...
ab_rounds() {
  local default=$1; shift
  local settings=("$@") began round i
  began=$(date +%s)
  for round in $(seq 1 20); do
    for ((i = 0; i < ${#settings[@]}; i++)); do
      [ $(( $(date +%s) - began )) -gt "${AB_DEADLINE_S:-$default}" ] && return 0
      ab_setting "$round" "${settings[$(( (i + round) % ${#settings[@]} ))]}"
    done
  done
}
