# Sourced by the cold-path A/B scripts (tests/gpu/session29_a.sh to session29_d.sh). Sourcing it starts the run: $OUT
# made, the environment every round runs in, the clock (`began`) and a start line. Then `cold_round`: one round of
# one setting of bench/sweep.py on the 384-case grid at K = 8 with nothing made before the clock (no spares, the
# re-runs started by the sweep: `cuprobe sweep run`'s path), its whole output appended to $OUT/cold.log and its row
# and the lines matching COLD_SHOW printed.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_STALL_S=30 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer
COLD_SHOW=${COLD_SHOW:-"slowest process|its run stage|before the first case|second thread|NOT RUN|confirmations: "}
began=$(date +%s)
echo "== $(date -u +%T) start"

# The run's last line: when it ended and how long it took.
cold_done() {
  echo "== done $(date -u +%T) ($(( $(date +%s) - began )) s)"
}

#   cold_round ROUND SETTING [NAME=VALUE ...]
cold_round() {
  local round=$1 setting=$2 rc; shift 2
  env "$@" timeout 90 python3 bench/sweep.py --skip-compare --full --slots 8 --no-warm --out /tmp/bench \
    > /tmp/bench.txt 2>&1
  rc=$?
  { echo "=== round $round $setting rc=$rc"; cat /tmp/bench.txt; } >> "$OUT/cold.log"
  echo "round $round $setting rc=$rc wall,cases/h: $(grep -E '^ +8 +none' /tmp/bench.txt | awk '{print $5, $6}')"
  grep -E "$COLD_SHOW" /tmp/bench.txt | sed 's/^ *//' | cut -c1-300
  rm -rf /tmp/bench
}

# Rounds of the settings named, which goes first rotating each round, each run by the caller's
# `cold_setting ROUND SETTING` (a cold_round with that setting's environment), until AB_DEADLINE_S (default DEFAULT)
# seconds have passed since the call or 20 rounds have run.
#   cold_rounds DEFAULT SETTING...
cold_rounds() {
  local default=$1; shift
  local settings=("$@") from round i
  from=$(date +%s)
  for round in $(seq 1 20); do
    for ((i = 0; i < ${#settings[@]}; i++)); do
      [ $(( $(date +%s) - from )) -gt "${AB_DEADLINE_S:-$default}" ] && return 0
      cold_setting "$round" "${settings[$(( (i + round) % ${#settings[@]} ))]}"
    done
  done
}
