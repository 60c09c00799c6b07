#!/usr/bin/env bash
# Three GPU demonstrations in one call, each with its own time budget (seconds), in priority order:
#   house.sh        GPU discovery against CUDA, and `cuprobe check` runs every GPU probe on the GPU worker
#   command_env.sh  what a command's child sees under the sanitizer; a planted defect there is still found
#   confirm.sh      confirmed initcheck findings (consequential, benign, blind-spot) and the confirmer's control
# From the project root on a GPU machine:  bash tests/gpu/all.sh [HOUSE_S ENV_S CONFIRM_S]
# Each script's own logs land under $OUT (house/, command_env/, confirm/); all.log is this console.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/all.log") 2>&1
house_s=${1:-180}; env_s=${2:-60}; confirm_s=${3:-260}
echo "== $(date -u +%FT%TZ) budgets: house ${house_s}s, command_env ${env_s}s, confirm ${confirm_s}s"
t0=$SECONDS
OUT="$OUT" timeout -k 5 "$house_s" bash tests/gpu/house.sh > /dev/null 2>&1
echo "house.sh rc=$? after $((SECONDS - t0)) s"
# Where each `cuprobe check` job went and how it ended, from the embedded store, even if check was cut short.
python3 - <<'PY' | tee "$OUT/house/check-jobs.txt"
import glob, sqlite3
for db in glob.glob("cuprobe-data/*.db"):
    rows = sqlite3.connect(db).execute("SELECT probe, tool, queue, state, outcome, substr(message, 1, 150) FROM jobs ORDER BY created_at")
    for row in rows:
        print(" | ".join(str(v) for v in row))
PY
t0=$SECONDS
mkdir -p "$OUT/command_env"
OUT="$OUT/command_env" timeout -k 5 "$env_s" bash tests/gpu/command_env.sh > /dev/null 2>&1
echo "command_env.sh rc=$? after $((SECONDS - t0)) s"
t0=$SECONDS
mkdir -p "$OUT/confirm"
OUT="$OUT/confirm" HARD_S=$((confirm_s - 20)) timeout -k 5 "$confirm_s" bash tests/gpu/confirm.sh > /dev/null 2>&1
echo "confirm.sh rc=$? after $((SECONDS - t0)) s"
