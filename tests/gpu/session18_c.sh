#!/usr/bin/env bash
# The compute-sanitizer line a user already runs, given to `cuprobe exec` as it is, on the H200. Predicted: read as
# `cuprobe exec -t memcheck -S leak-check=full -- /tmp/harness oob` with --xml/--save/--print-limit set aside; exit 1,
# findings, one compute-sanitizer on the command line, the same findings as `cuprobe exec -t memcheck -S
# leak-check=full -- /tmp/harness oob` (the -S form, run next); and the line with --tool racecheck --padding 8 refused
# (exit 2) before running.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session18_c.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
export CUPROBE_SANITIZER_PATH=$CS
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || { echo "harness build failed"; exit 1; }
summary='import json,sys; r=json.load(open(sys.argv[1])); c=r["command"]; print(r["outcome"], r["tool"], "records", r["records"], "sanitizers on the line", sum(p.endswith("compute-sanitizer") for p in c), "leak-check", c[c.index("--leak-check")+1] if "--leak-check" in c else None, "signatures", sorted(f["signature"] for f in r["findings"]))'
python3 -m cuprobe.service.cli exec --json -- "$CS" --tool memcheck --leak-check full --xml --save /tmp/mine.xml --print-limit 10 /tmp/harness oob > "$OUT/line.json" 2> "$OUT/line.err"
echo "pasted line: exit=$?"; cat "$OUT/line.err"; python3 -c "$summary" "$OUT/line.json"
python3 -m cuprobe.service.cli exec --json -t memcheck -S leak-check=full -- /tmp/harness oob > "$OUT/s.json" 2> "$OUT/s.err"
echo "-S form: exit=$?"; python3 -c "$summary" "$OUT/s.json"
python3 -m cuprobe.service.cli exec -- "$CS" --tool racecheck --padding 8 /tmp/harness oob > "$OUT/refused.txt" 2>&1
echo "racecheck with --padding: exit=$?"; tail -3 "$OUT/refused.txt"
