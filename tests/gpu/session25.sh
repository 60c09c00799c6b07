#!/usr/bin/env bash
# Session 25's second call: the service comparison of session24_b.sh again (three rounds), now that a GPU worker runs
# sweep-lane jobs with the sweep's record cap. In the first call (same session) every service row stopped each
# 96-case job at the gate's 10,000 records: 332 of 384 cases `sanitizer_error`, and its walls (8.4-11.2 s) timed runs
# that kept too few records. That call's box (an H100) ran the local rows and the A/B rounds faster than session 23's
# boxes did (K = 8, defaults: 4.8-5.8 s), so the predictions are scaled to it; compare only within this call.
# Predicted (written before this call): every row's findings identical to the local K = 8 row (clean 260, findings
# 124); local K = 8 5.5-8 s (173,000-250,000 cases per GPU-hour, after the first round's compile); through the
# service at the worker's K = 4 with one set of re-runs per host 8-11 s (126,000-173,000: local K = 4 is about 1.4x
# K = 8's wall, plus each job's claim, store and poll), with each job's own 10.5-14 s (99,000-132,000); shared/own
# wall 0.7-0.85; `shared` 4 of 4 in the service rows, 0 in service-own.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session25.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/b"
ROUNDS=3 OUT="$OUT/b" timeout 280 bash tests/gpu/session24_b.sh > "$OUT/b/session24_b.log" 2>&1
echo "session24_b rc=$?"
tar -C "$OUT" -czf /tmp/session25.tgz b && mv /tmp/session25.tgz "$OUT/session25.tgz"
