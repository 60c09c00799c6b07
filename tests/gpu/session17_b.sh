#!/usr/bin/env bash
# Sanitizer options passed through, and a log written with --prefix, on the H200 (neither has run on a GPU yet).
# 1. compute-sanitizer --prefix cs: on the harness's out-of-bounds write; `cuprobe parse --prefix cs:` reads it
#    (predicted exit 1, findings, summary_count 4 as the memcheck_oob capture) and without --prefix it is refused
#    (predicted exit 2, naming 'cs:').
# 2. `cuprobe exec` of the harness with each newly passed option: the option on the sanitizer's command line and a
#    result the installed sanitizer accepted. Predicted: findings (exit 1) for every defect case, the option in the
#    result's command; check-tensor-ops and nvtx-exclude refused on 2025.3 ("has no option", exit 2 or unavailable)
#    and accepted on 2026.4. racecheck-detect-level=info: `--print-level info` on the command line too, and at least
#    as many records as racecheck_race_analysis at the default level.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session17_b.sh
set -u
OUT=${OUT:-/tmp/out}; O="$OUT/session17_b"; mkdir -p "$O"
exec > >(tee "$O/session17_b.log") 2>&1
export PYTHONUNBUFFERED=1 COLUMNS=200
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
export CUPROBE_SANITIZER_PATH=$CS
git log --oneline -1 2>/dev/null
"$CS" --version | tail -1
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || { echo "harness build failed"; exit 1; }

echo "== 1. a log written with --prefix cs:"
"$CS" --tool memcheck --print-limit 0 --prefix cs: --xml --save "$O/prefix.xml" -- /tmp/harness oob \
  > "$O/prefix-stdout.txt" 2> "$O/prefix-stderr.txt"
echo "sanitizer exit=$?"; head -3 "$O/prefix-stdout.txt"; tail -1 "$O/prefix-stdout.txt"
python3 -m cuprobe.service.cli parse "$O/prefix.xml" --log "$O/prefix-stdout.txt" --prefix cs: --json > "$O/prefix-parse.json"
echo "parse --prefix cs: exit=$? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["outcome"], "summary_count", r["summary_count"], "records", r["records"])' "$O/prefix-parse.json")"
python3 -m cuprobe.service.cli parse "$O/prefix.xml" --log "$O/prefix-stdout.txt"; echo "parse without --prefix exit=$?"

echo "== 2. options passed through (tool, harness case, option)"
while read -r tool args option; do
  [ -z "$tool" ] && continue
  name=${option%%=*}
  python3 -m cuprobe.service.cli exec -t "$tool" -S "$option" --json -- /tmp/harness ${args//,/ } > "$O/exec-$name.json" 2> "$O/exec-$name.err"
  rc=$?
  python3 - "$O/exec-$name.json" "$rc" "$option" "$tool" <<'EOF'
import json, sys
path, rc, option, tool = sys.argv[1:]
flag = "--" + option.split("=")[0]
try:
    r = json.load(open(path))
except ValueError:
    print(f"{tool:10} {option:44} exit={rc} no JSON: {open(path.replace('.json', '.err')).read()[-200:]!r}")
    raise SystemExit
print(f"{tool:10} {option:44} exit={rc} {r['outcome']:16} records={r['records']:<5} on the command line: "
      f"{flag in r.get('command', [])}  {r['message'][:90]}")
EOF
done <<'LIST'
memcheck oob report-api-errors=all
memcheck oob check-cache-control
memcheck oob detect-missing-module-unload
memcheck oob track-stream-ordered-races=use-after-free
memcheck oob destroy-on-device-error=kernel
memcheck oob check-exit-code=no
memcheck oob force-synchronization-limit=2
memcheck oob report-device-side-allocation-failure=yes
memcheck oob check-tensor-ops=yes
memcheck oob nvtx-exclude=warmup
initcheck uninit,1024,1000 initcheck-address-space=all
initcheck uninit,1024,1000 unused-memory-threshold=50
racecheck race racecheck-num-workers=2
racecheck race racecheck-memcpy-async=no
racecheck race racecheck-deadlock-timeout=1000
racecheck race racecheck-detect-level=info
synccheck syncwarp missing-barrier-init-is-fatal=no
LIST
echo "== done"
