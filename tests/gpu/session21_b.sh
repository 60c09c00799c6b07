#!/usr/bin/env bash
# Session 21: a kernel filter that selects no launch, end to end with the real sanitizers (the launch dump:
# service/sanitizer/launches.py). Predicted, for each line below:
#   2026.4, `cuprobe exec -t initcheck -S kernel-name=kns=no_such_kernel -- harness uninit 1024 1000`: exit 3,
#     sanitizer_error, "nothing was checked: --kernel-name kns=no_such_kernel selected none of the program's 1 kernel
#     launch(es) (kernels: double_all) ..."; the command carries --dump-kernel-launches;
#   2026.4, the same with kns=double_all: exit 1, one uninitialized-global-read finding, count 24, summary_count 24;
#   2025.3, kns=no_such_kernel: exit 0, clean, "only the launches that ... (compute-sanitizer 2026.4 and later ...)";
#   2026.4, `cuprobe run uninit-read --tool initcheck --kernel no_such_kernel` (the confirmer's control kernels are
#     checked on purpose and counted apart): exit 3, sanitizer_error, "nothing was checked"; `--kernel double_all`:
#     exit 1, one consequential finding (count 24);
#   2026.4, `cuprobe run narrow-matmul --tool initcheck --kernel _guarded_` with 12 cases: clean or benign findings only,
#     its message naming how many launches were checked of how many (the unguarded and torch kernels filtered).
#   2026.4, racecheck on the harness's `race` (racy_reduce) and synccheck on `syncwarp`, each with a filter that
#     matches its kernel (findings, exit 1) and one that matches none (sanitizer_error, exit 3): whether those tools'
#     summaries count the launch records as initcheck's and memcheck's do (captured there only) is read from
#     summary_count and the kept run.xml.
# Each step's files (run.xml, stdout, stderr, result.json) stay in $OUT/NAME; its result in $OUT/NAME.json.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session21_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200
NEW=/tmp/site/nvidia/cu13/bin/compute-sanitizer; OLD=/usr/local/cuda/bin/compute-sanitizer
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || { echo "harness build failed"; exit 1; }
show='import json,sys; r=json.load(open(sys.argv[1])); print(" ", r["outcome"], "| exit_code", r["exit_code"], "| records", r["records"], "| summary", r["summary_count"], "| dump", "--dump-kernel-launches" in r["command"], "| findings", [(f["kind"], f["count"], f.get("confirmation")) for f in r["findings"]]); print("  message:", r["message"][:600])'
step() {  # NAME SANITIZER ARGS...
  local name=$1 san=$2; shift 2
  local verb=$1; shift
  CUPROBE_SANITIZER_PATH=$san timeout 150 python3 -m cuprobe.service.cli "$verb" --workdir "$OUT/$name" --json "$@" \
    > "$OUT/$name.json" 2> "$OUT/$name.err"
  echo "== $name: exit=$? ($(basename "$(dirname "$(dirname "$san")")"))"
  python3 -c "$show" "$OUT/$name.json" 2>/dev/null || tail -3 "$OUT/$name.err"
}
step exec_new_nomatch "$NEW" exec -t initcheck -S kernel-name=kns=no_such_kernel -- /tmp/harness uninit 1024 1000
step exec_new_match "$NEW" exec -t initcheck -S kernel-name=kns=double_all -- /tmp/harness uninit 1024 1000
step exec_old_nomatch "$OLD" exec -t initcheck -S kernel-name=kns=no_such_kernel -- /tmp/harness uninit 1024 1000
step run_new_nomatch "$NEW" run uninit-read --tool initcheck --kernel no_such_kernel
step run_new_match "$NEW" run uninit-read --tool initcheck --kernel double_all
step exec_new_race_match "$NEW" exec -t racecheck -S kernel-name=kns=racy_reduce -- /tmp/harness race
step exec_new_race_nomatch "$NEW" exec -t racecheck -S kernel-name=kns=no_such_kernel -- /tmp/harness race
step exec_new_sync_match "$NEW" exec -t synccheck -S kernel-name=kns=warp -- /tmp/harness syncwarp
step exec_new_sync_nomatch "$NEW" exec -t synccheck -S kernel-name=kns=no_such_kernel -- /tmp/harness syncwarp
step run_new_narrow "$NEW" run narrow-matmul --tool initcheck --kernel _guarded_ -p 'n=[1,2,31,32]' -p 'variants=["guarded","unguarded","torch"]'
for d in "$OUT"/*/; do grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$d/stdout.txt" 2>/dev/null | sed "s|^|$(basename "$d"): |"; done
