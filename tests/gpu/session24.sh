#!/usr/bin/env bash
# Session 24's first call, both measurements in one (about 420 s with setup): why a ready re-run's cases are slower
# (tests/gpu/session24_a.sh, 200 s of A/B rounds) and, first, a sweep here against the same sweep through the service
# (tests/gpu/session24_b.sh, two rounds of each); predictions in their headers. Tar of everything in $OUT/session24.tgz.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session24.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/a" "$OUT/b"
OUT="$OUT/b" timeout 240 bash tests/gpu/session24_b.sh > "$OUT/b/session24_b.log" 2>&1
echo "session24_b rc=$?"
AB_DEADLINE_S=${AB_DEADLINE_S:-200} OUT="$OUT/a" timeout 330 bash tests/gpu/session24_a.sh > "$OUT/a/session24_a.log" 2>&1
echo "session24_a rc=$?"
tar -C "$OUT" -czf /tmp/session24.tgz a b && mv /tmp/session24.tgz "$OUT/session24.tgz"
