#!/usr/bin/env bash
# Session 22: runs whose kernel filters leave some of a probe's launches unchecked, after cuprobe stopped passing
# `--initcheck-track-filtered-global-memory no` beside a user's filter and learnt initcheck's host API records.
# Predicted, for each step:
#   new_uninit_match (2026.4, `run uninit-read --kernel double_all`): exit 1, one consequential
#     uninitialized-global-read (count 24); the command has no --initcheck-track-filtered-global-memory; the
#     confirmer's blind-spot control expects and gets "no finding" (tracking on, the hidden write is seen), the other
#     two controls benign and consequential; no host API finding.
#   new_uninit_nomatch (2026.4, `--kernel no_such_kernel`): exit 3, "... — nothing was checked: --kernel-name
#     kns=no_such_kernel selected none of the program's 1 kernel launch(es) (kernels: double_all) ..., so no positive
#     control could fire"; 0 host API records (session 22 call2 had 128 with the untracking option).
#   new_narrow (2026.4, `run narrow-matmul --kernel _guarded_`, 12 cases): exit 3, the unguarded controls unmet, the
#     message blaming "the filters left 11 of 15 kernel launch(es) unchecked"; 0 host API records (call2: 528); the
#     guarded and torch cases clean "of the launches checked".
#   old_narrow (2025.3, the same): exit 3; host API records on the unguarded and torch cases' `y` (2025.3 never
#     tracks filtered kernels' writes), "the instrument is broken, or --kernel-name kns=_guarded_ left ...".
#   old_uninit_match (2025.3, `run uninit-read --kernel double_all`): exit 1, consequential; blind-spot control
#     blind-spot (2025.3 does not track the hidden writer).
# Then tests/gpu/core.sh (both sanitizers). Each step's workdir is archived in $OUT/session22_a.tgz.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session22_a.sh
set -u
OUT=${OUT:-/tmp/out}; W=/tmp/s22a; rm -rf "$W"; mkdir -p "$OUT" "$W"
export PYTHONUNBUFFERED=1 COLUMNS=200
NEW=/tmp/site/nvidia/cu13/bin/compute-sanitizer; OLD=/usr/local/cuda/bin/compute-sanitizer
show='import json,sys; r=json.load(open(sys.argv[1])); print(" ", r["outcome"], "| exit_code", r["exit_code"], "| records", r["records"], "| summary", r["summary_count"], "| untrack", "--initcheck-track-filtered-global-memory" in r["command"], "| findings", [(f["kind"], f["case"], f["count"], f.get("confirmation")) for f in r["findings"]][:12]); print("  control:", [(c["case"].split("/")[-1], c["expected"], c["got"], c["ok"]) for c in r.get("confirmation_control") or []]); print("  cases:", [(c["id"], c["passed"], c["reason"][:90]) for c in r["cases"]][:12]); print("  message:", r["message"][:700])'
step() {  # NAME SANITIZER ARGS...
  local name=$1 san=$2; shift 2
  CUPROBE_SANITIZER_PATH=$san timeout 200 python3 -m cuprobe.service.cli run --workdir "$W/$name" --json "$@" \
    > "$W/$name.json" 2> "$W/$name.err"
  echo "== $name: exit=$? ($("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p'))"
  python3 -c "$show" "$W/$name.json" 2>/dev/null || tail -3 "$W/$name.err"
}
narrow=(narrow-matmul --tool initcheck --kernel _guarded_ -p 'n=[1,2,31,32]' -p 'variants=["guarded","unguarded","torch"]')
step new_uninit_match "$NEW" uninit-read --tool initcheck --kernel double_all
step new_uninit_nomatch "$NEW" uninit-read --tool initcheck --kernel no_such_kernel
step new_narrow "$NEW" "${narrow[@]}"
step old_narrow "$OLD" "${narrow[@]}"
step old_uninit_match "$OLD" uninit-read --tool initcheck --kernel double_all
for d in "$W"/*/; do grep -h "ERROR SUMMARY" "$d/stdout.txt" 2>/dev/null | sed "s|^|$(basename "$d"): |"; done
tar czf "$OUT/session22_a.tgz" -C /tmp s22a
echo "== tests/gpu/core.sh"
OUT=$OUT timeout 330 bash tests/gpu/core.sh > /dev/null 2>&1; echo "core exit=$?"
grep -E "passed|failed|error" "$OUT/core.log" | tail -5
