#!/usr/bin/env bash
# Code nobody here wrote under cuprobe: NVIDIA's compute-sanitizer-samples (built with their own Makefiles) run as
# `command` entries, and a pytest file of torch CUDA tests with one planted out-of-bounds write, run per test.
# Needs the samples checkout carried to the box at .samples/ (or SAMPLES=DIR); it is built in a copy under /tmp.
# Run on the GPU box from the project root:  source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/own_code.sh
# Writes under $OUT/own_code/: own_code.log, one JSON per `cuprobe exec` run, the suites, gate reports,
# summary.txt (the table: case, tool, options, expected, got); and $OUT/sanitizer_help/ (help texts).
set -uo pipefail
OUT=${OUT:-/tmp/out}
O="$OUT/own_code"; mkdir -p "$O"
exec > >(tee "$O/own_code.log") 2>&1
export PYTHONUNBUFFERED=1 COLUMNS=200
ROOT=$(pwd)
SOURCE=$(readlink -f "${SAMPLES:-.samples}")
SAMPLES=/tmp/own-code-samples
if command -v cuprobe >/dev/null; then CUPROBE=(cuprobe); else CUPROBE=(python3 -m cuprobe.service.cli.main); fi
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
T0=$SECONDS

echo "== banner"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || echo "nvidia-smi failed"
"${CUPROBE[@]}" doctor; echo "doctor rc=$?"
bash tests/gpu/sanitizer_help.sh

echo "== build the samples with their own Makefiles ($SOURCE, built in $SAMPLES; -lineinfo for file:line)"
[ -d "$SOURCE/Memcheck" ] || { echo "no samples checkout at $SOURCE"; exit 3; }
rm -rf "$SAMPLES"; cp -r "$SOURCE" "$SAMPLES"
for d in Memcheck Racecheck Synccheck Initcheck Suppressions; do
  make -C "$SAMPLES/$d" CUDA_PATH=/usr/local/cuda COMPILE_FLAGS="-MMD -lineinfo" > "$O/build-$d.log" 2>&1
  echo "build $d rc=$?"
done
# The Suppressions sample's own recipe (its Makefile's gen_supp / initcheck_gen_supp): the XML of a run is the file.
(cd "$SAMPLES/Suppressions" && "$CS" --save memcheck_supp.xml --xml ./suppressions_demo > "$O/gen_supp.log" 2>&1
 "$CS" --tool initcheck --save initcheck_supp.xml --xml ./suppressions_initcheck_demo >> "$O/gen_supp.log" 2>&1)
echo "suppression files: $(ls "$SAMPLES/Suppressions"/*_supp.xml 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"

rows=()
# one NAME EXPECT TOOL DIR [cuprobe exec flags...] -- CMD...: one ad hoc run, its JSON kept, one table row.
one() {
  local name=$1 expect=$2 tool=$3 dir=$4; shift 4
  local t0=$SECONDS
  "${CUPROBE[@]}" exec -t "$tool" --any-exit --cwd "$dir" --workdir "$O/work/$name" --json "$@" > "$O/$name.json" 2> "$O/$name.err"
  local rc=$?
  local got; got=$(python3 - "$O/$name.json" "$rc" <<'PY'
import json, sys
from collections import Counter
try:
    r = json.load(open(sys.argv[1]))
except Exception as exc:
    print(f"rc={sys.argv[2]} no JSON ({exc})"); sys.exit()
fs = [f for f in r["findings"] if not f.get("fallout")]
sev = Counter()
for f in fs:
    sev[f.get("severity", "error")] += f["count"]
kinds = ",".join(sorted({f["kind"] for f in fs})) or "-"
print(f"rc={sys.argv[2]} {r['outcome']} findings={len(fs)} errors={sev['error']} warnings={sev['warning']} "
      f"summary={r.get('summary_count')} kinds={kinds} | {r['message'][:90]}")
PY
)
  rows+=("$(printf '%-22s %-9s %-40s %s  [%ss]' "$name" "$tool" "expect: $expect" "$got" "$((SECONDS - t0))")")
  echo "== $name: $got"
}

M="$SAMPLES/Memcheck"; R="$SAMPLES/Racecheck"; Y="$SAMPLES/Synccheck"; I="$SAMPLES/Initcheck"; S="$SAMPLES/Suppressions"
one memcheck_demo ">=1 invalid-global-write, no leak" memcheck "$M" -- ./memcheck_demo
one memcheck_demo_leaks "+ leak size=1024 @main" memcheck "$M" -S leak-check=full -- ./memcheck_demo
one block_error "1 error (analysis)" racecheck "$R" -- ./block_error
one warp_error "0 errors 248 warnings rc=0" racecheck "$R" -S racecheck-report=hazard -- ./warp_error
one warp_error_failwarn "rc=1 at --fail-on warning" racecheck "$R" -S racecheck-report=hazard --fail-on warning \
  -- ./warp_error
one divergent_threads "clean on sm_90 (captured: 0)" synccheck "$Y" -- ./divergent_threads
one illegal_syncwarp "17 barrier errors" synccheck "$Y" -- ./illegal_syncwarp
one memset_error "48 uninit reads" initcheck "$I" -- ./memset_error
one memset_error_unused "unused-memory record?" initcheck "$I" -S track-unused-memory -- ./memset_error
one supp_memcheck "8 api-error" memcheck "$S" -- ./suppressions_demo
one supp_memcheck_with "clean: all suppressed" memcheck "$S" -S suppressions="$S/memcheck_supp.xml" \
  -- ./suppressions_demo
one supp_initcheck "1 uninit read" initcheck "$S" -- ./suppressions_initcheck_demo
one supp_initcheck_with "clean: all suppressed" initcheck "$S" -S suppressions="$S/initcheck_supp.xml" \
  -- ./suppressions_initcheck_demo
one supp_initcheck_unused "unused-memory record?" initcheck "$S" -S track-unused-memory \
  -- ./suppressions_initcheck_demo
one wrong_tool_option "rc=2 refused" racecheck "$R" -S padding=64 -- ./block_error
# What the sanitizer itself prints with a suppressions file (for counting `suppressed` honestly later).
"$CS" --suppressions "$S/memcheck_supp.xml" "$S/suppressions_demo" > "$O/raw_supp_memcheck.txt" 2>&1
"$CS" --tool initcheck --suppressions "$S/initcheck_supp.xml" "$S/suppressions_initcheck_demo" \
  > "$O/raw_supp_initcheck.txt" 2>&1
"$CS" --tool initcheck --track-unused-memory --xml --save "$O/raw_unused.xml" "$I/memset_error" \
  > "$O/raw_unused.txt" 2>&1

echo "== the samples as a suite of command entries (cuprobe's planted probes are the positive controls)"
cat > "$O/samples.toml" <<TOML
name = "compute-sanitizer-samples"

[[probe]]
name = "memcheck-control"
probe = "planted"
tool = "memcheck"
params = { defect = "oob" }
control = true

[[probe]]
name = "racecheck-control"
probe = "planted"
tool = "racecheck"
params = { defect = "race" }
control = true

[[probe]]
name = "synccheck-control"
probe = "planted"
tool = "synccheck"
params = { defect = "syncwarp" }
control = true

[[probe]]
name = "initcheck-control"
probe = "uninit-read"
tool = "initcheck"
control = true

[[test]]
name = "memcheck-demo"
kind = "command"
tool = "memcheck"
cwd = "$M"
expect_exit = "any"
argv = ["./memcheck_demo"]
options = { leak_check = "full" }

[[test]]
name = "block-error"
kind = "command"
tool = "racecheck"
cwd = "$R"
expect_exit = "any"
argv = ["./block_error"]

[[test]]
name = "warp-error"
kind = "command"
tool = "racecheck"
cwd = "$R"
expect_exit = "any"
argv = ["./warp_error"]
options = { racecheck_report = "hazard" }

[[test]]
name = "syncwarp"
kind = "command"
tool = "synccheck"
cwd = "$Y"
expect_exit = "any"
argv = ["./illegal_syncwarp"]

[[test]]
name = "memset-error"
kind = "command"
tool = "initcheck"
cwd = "$I"
expect_exit = "any"
argv = ["./memset_error"]
TOML
"${CUPROBE[@]}" gate "$O/samples.toml" --local --workdir /tmp/own-samples --junit "$O/samples.junit.xml" \
  --sarif "$O/samples.sarif" --summary "$O/samples.md" 2>&1 | tee "$O/samples.txt"
samples_rc=${PIPESTATUS[0]}

echo "== torch pytest file, one process per test under memcheck"
P="$O/torch_project"; rm -rf "$P"; mkdir -p "$P"; cp tests/gpu/programs/own_code/test_torch_planted.py "$P/"
cat > "$O/torch.toml" <<TOML
name = "torch-own-tests"

[[probe]]
name = "memcheck-control"
probe = "planted"
tool = "memcheck"
params = { defect = "oob" }
control = true

[[test]]
name = "torch-tests"
kind = "pytest"
tool = "memcheck"
cwd = "$P"
paths = ["test_torch_planted.py"]
env = { PYTORCH_NO_CUDA_MEMORY_CACHING = "1" }
timeout_s = 300
TOML
"${CUPROBE[@]}" gate "$O/torch.toml" --local --workdir /tmp/own-torch --junit "$O/torch.junit.xml" \
  --summary "$O/torch.md" 2>&1 | tee "$O/torch.txt"
torch_rc=${PIPESTATUS[0]}
# Each test's stdout/stderr and result.json: why a test process exited as it did.
tar -czf "$O/torch-runs.tgz" -C /tmp own-torch 2>/dev/null
new_cases=$(grep -E '^(new|expired)' "$O/torch.txt" | grep -o '(test_torch_planted.py::[^)]*)' | sort -u | tr '\n' ' ')

{
  echo "== summary ($((SECONDS - T0)) s)"
  printf '%s\n' "${rows[@]}"
  echo "samples gate: exit $samples_rc (expect 1: the samples' defects are new findings; warp-error only as warnings)"
  grep -E '^(new|warning)' "$O/samples.txt" | sed 's/ — .*//' | sed 's/^/  /'
  echo "torch gate: exit $torch_rc (expect 1); cases with new findings: ${new_cases:-none} (expect only test_planted_oob_write)"
} | tee "$O/summary.txt"
