#!/usr/bin/env bash
# replay's new diagnostics on the GPU: the built-in example with the index_add plant on CUDA, three processes.
# Predicted: findings, `replay|mix|output|forward` at step 1 in 2 of 2 comparisons; the three processes in three
# groups (atomics differ every run), so no "process 0 is the one that differs"; every process the same `hosts`
# entry, so no settings named; the capture re-run diverges too (a few thousand elements).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session18_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m cuprobe.service.cli run replay -p device=cuda -p example_plant=index-add -p processes=3 --json > "$OUT/replay_cuda.json" 2> "$OUT/replay_cuda.err"
echo "exit=$?"
python3 - "$OUT/replay_cuda.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
obs = r["cases"][0]["observations"]
print(r["outcome"], "| agreeing:", obs.get("agreeing_processes"), "| distinct hosts:",
      len({json.dumps(h, sort_keys=True) for h in obs["hosts"]}), obs["hosts"][0])
for f in r["findings"]:
    print(f["signature"], f["seen"], "|", f["message"])
PY
