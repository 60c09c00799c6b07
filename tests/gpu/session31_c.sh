#!/usr/bin/env bash
# Session 31, call 3: when the packed plan's batch with the torch cases ends, beside the others. In calls 1-2 it was
# never the slowest process after the first round; bench/sweep.py now prints each side's processes' total time
# ("with torch's cases: ..."). Three cold rounds of the 384-case grid at K = 8 at the defaults.
# Predicted (written before this call): the batch with the torch cases 0.5-1.5 s shorter than the others' median, so
# torch's import (NEED_RECORDS, 3,000 records) is counted high; cases per GPU-hour 140,000-165,000.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session31_c.sh
COLD_SHOW="slowest process|with torch's cases|second thread|NOT RUN|confirmations: "
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
for round in 1 2 3 4; do cold_round "$round" defaults; done
cold_done
