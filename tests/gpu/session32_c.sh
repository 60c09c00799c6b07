#!/usr/bin/env bash
# Session 32, call 3: the defaults as they land (the confirmation's re-runs in 2 processes), on a third box.
# 1. `cuprobe run uninit-read --tool initcheck` and `cuprobe run narrow-matmul --tool initcheck`: the user's path at
#    the defaults, its confirmation from re-runs in two processes.
# 2. The cold path (`cuprobe sweep run`'s: the 384-case grid at K = 8, nothing made before the clock) at the defaults
#    until AB_DEADLINE_S (default 240).
# Predicted (written before this call): uninit-read's one finding consequential and narrow-matmul's findings benign,
# the confirmer's control right in both, "confirmed: 1 consequential" / "... benign" in the message. Cold: after a
# first round that compiles the kernels, every round at or above 150,000 cases per GPU-hour on an H100 like calls 1-2
# (medians 187,702 and 192,722); on a box as slow as session 31's call 2 (143,746 at that session's defaults),
# 150,000-165,000. Every finding benign, every control right.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session32_c.sh
COLD_SHOW="slowest process|before the first case|re-runs took|NOT RUN"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
for probe in uninit-read narrow-matmul; do
  timeout -k 5 120 python3 -m cuprobe.service.cli run "$probe" --tool initcheck --timeout 110 > "$OUT/run-$probe.txt" 2>&1
  echo "cuprobe run $probe rc=$?"; grep -iE "confirmed|outcome|control" "$OUT/run-$probe.txt" | cut -c1-300 | head -6
done
cold_setting() { cold_round "$1" "$2"; }
cold_rounds 240 defaults
cold_done
