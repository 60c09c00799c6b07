#!/usr/bin/env bash
# The gate on a GPU machine: `cuprobe gate suites/premerge.toml --local` on the real probes, three times:
#   1. --update-baseline: write a baseline from this build      (expect exit 0: controls fire, nothing new)
#   2. against that baseline                                    (expect exit 0)
#   3. the suite plus the unguarded narrow-matmul as code under test, against the same baseline (expect exit 1)
# Run from the project root there:  bash tests/gpu/gate.sh
# Keeps under $OUT/gate/: each step's console log, JUnit XML, SARIF, Markdown summary, the baseline and the
# defect suite; $OUT/gate/summary.txt is the table printed at the end.
set -uo pipefail
OUT=${OUT:-/tmp/out}
G="$OUT/gate"; mkdir -p "$G"
exec > >(tee "$G/gate.log") 2>&1
export PYTHONUNBUFFERED=1 COLUMNS=160
if command -v cuprobe >/dev/null; then CUPROBE=(cuprobe); else CUPROBE=(python3 -m cuprobe.service.cli); fi
rows=()

echo "== banner"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || echo "nvidia-smi failed"
"${CUPROBE[@]}" doctor; echo "doctor rc=$?"

# step NAME EXPECTED_RC SUITE [ARGS...]: one gate run with all three reports.
step() {
  local name=$1 expected=$2 suite=$3; shift 3
  local t0=$SECONDS
  echo "== $name: ${CUPROBE[*]} gate $suite --local --baseline $G/premerge.baseline.toml $*"
  "${CUPROBE[@]}" gate "$suite" --local --baseline "$G/premerge.baseline.toml" --workdir "/tmp/gate-$name" \
    --junit "$G/$name.junit.xml" --sarif "$G/$name.sarif" --summary "$G/$name.md" "$@" 2>&1 | tee "$G/$name.txt"
  local rc=${PIPESTATUS[0]}
  local verdict; verdict=$(head -1 "$G/$name.md" 2>/dev/null || echo "no summary")
  local ok=no; [ "$rc" = "$expected" ] && ok=yes
  rows+=("$(printf '%-10s %8s %4s %5s %6s  %s' "$name" "$expected" "$rc" "$ok" "$((SECONDS - t0))s" "$verdict")")
  echo "== $name: exit $rc (expected $expected) in $((SECONDS - t0)) s"
}

rm -f "$G/premerge.baseline.toml"
step baseline 0 suites/premerge.toml --update-baseline
cp "$G/premerge.baseline.toml" "$G/premerge.baseline.first.toml" 2>/dev/null
step clean 0 suites/premerge.toml

# A new defect: the unguarded kernel as code under test (not a control), at widths where it reads padding.
cp suites/premerge.toml "$G/premerge-defect.toml"
cat >> "$G/premerge-defect.toml" <<'TOML'

[[probe]]
name = "narrow-matmul-unguarded"
probe = "narrow-matmul"
tool = "initcheck"
params = { m = 32, k = 32, tile = 32, n = [2, 33], variants = ["unguarded"] }
TOML
step defect 1 "$G/premerge-defect.toml"

{
  echo "== summary (expected and actual exit codes of cuprobe gate; 0 pass, 1 new findings, 3 could not run)"
  printf '%-10s %8s %4s %5s %6s  %s\n' run expected rc ok wall summary
  printf '%s\n' "${rows[@]}"
  echo "new findings in the defect run:"; grep -A8 '^### New findings' "$G/defect.md" 2>/dev/null | sed 's/^/  /'
} | tee "$G/summary.txt"
