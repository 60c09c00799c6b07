#!/usr/bin/env bash
# How much of a record's cost is the sanitizer printing it as text beside the XML, and what the console still says
# when it prints less. (1) Captures at --print-level fatal and error (compute-sanitizer 2025.3.1.0) of the cases whose
# console text cuprobe reads (ERROR SUMMARY, "Error: process didn't terminate successfully", not a CUDA program, a
# missing program, a leak summary, racecheck's summary) and of record-heavy ones, for the CPU tests; (2)
# tests/gpu/record_options.py --set console (17,408 records, two rounds); (3) bench/sweep.py on the 384-case grid at
# K = 8 with the sanitizer's own level and with CUPROBE_CONSOLE_PRINT_LEVEL=fatal, alternating, twice each.
# Predicted: at fatal no record is printed, the XML keeps all 17,408 records and the same findings, the summary lines
# stay; the record-heavy run 20-35 % faster in wall and CPU; the grid at K = 8 10-20 % faster (the cores are the limit
# there). About 7 minutes.
# Part (3) ran with an experimental setting, CUPROBE_CONSOLE_PRINT_LEVEL (compute-sanitizer --print-level for every
# run), taken out again after this call: at fatal the sanitizer saves no record to the XML either (measured here), so
# the setting could only lose findings. Without it, part (3) runs the sanitizer's own level all four times. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session14_a.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
CS=$CUPROBE_SANITIZER_PATH
nproc; uptime; "$CS" --version | tail -1
echo "== captures $(date -u +%T)"
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || echo "harness build failed"
C="$OUT/captures"; mkdir -p "$C"
run_case() {  # run_case LEVEL NAME TOOL "EXTRA" PROGRAM ARGS...
  local level=$1 name=$2 tool=$3 extra=$4; shift 4
  local d="$C/$level/$name"; mkdir -p "$d"
  local cmd=("$CS" --tool "$tool" --print-limit 0 $extra --print-level "$level" --xml --save "$d/run.xml" --error-exitcode 86 -- "$@")
  printf '%q ' "${cmd[@]}" > "$d/cmd.txt"; echo >> "$d/cmd.txt"
  timeout 120 "${cmd[@]}" > "$d/stdout.txt" 2> "$d/stderr.txt"; echo $? > "$d/exit_code"
  printf '%-6s %-30s exit=%-4s records=%-6s stdout=%sB  %s\n' "$level" "$name" "$(cat "$d/exit_code")" \
    "$(grep -c '<record>' "$d/run.xml" 2>/dev/null || echo none)" "$(stat -c %s "$d/stdout.txt")" \
    "$(grep -E 'SUMMARY|Error|Target application' "$d/stdout.txt" | tr '\n' '|' | cut -c1-160)"
}
P='{"m":32,"k":32,"tile":32,"n":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"variants":["unguarded"]}'
for level in fatal error; do
  run_case $level initcheck_uninit initcheck "" /tmp/harness uninit 1024 1000
  run_case $level initcheck_ok initcheck "" /tmp/harness ok
  run_case $level memcheck_oob memcheck "" /tmp/harness oob
  run_case $level memcheck_leak_api memcheck "--leak-check full" /tmp/harness leak_api
  run_case $level memcheck_not_cuda memcheck "" /bin/true
  run_case $level memcheck_missing_program memcheck "" /nonexistent/program
  run_case $level memcheck_exit3 memcheck "" /tmp/harness exit3
  run_case $level memcheck_abort memcheck "" /tmp/harness abort
  run_case $level memcheck_segv memcheck "" /tmp/harness segv
  run_case $level racecheck_race_analysis racecheck "--racecheck-report analysis" /tmp/harness race
  run_case $level synccheck_syncwarp synccheck "" /tmp/harness syncwarp
  run_case $level narrow_backtrace_no initcheck "--show-backtrace no --demangle no" \
    python3 -m cuprobe.probes narrow-matmul --tool initcheck --params "$P" --out "$C/$level/narrow_backtrace_no/result.json"
done
"$CS" --version > "$C/version.txt"
tar czf "$OUT/captures.tgz" -C "$OUT" captures && rm -rf "$C"
echo "== record_options.py --set console $(date -u +%T)"
timeout 300 python3 tests/gpu/record_options.py --rounds 2 --set console > "$OUT/options.txt" 2> "$OUT/options.err"
echo "rc=$?"; cat "$OUT/options.txt"; tail -3 "$OUT/options.err"
P2='{"m":32,"k":32,"tile":32,"n":[1,33],"variants":["unguarded","guarded","torch"]}'
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P2" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled, torch imported once: rc=$?"
B="$OUT/benches"; mkdir -p "$B"
python3 tests/gpu/cpu_sample.py "$B/cpu.tsv" --interval 0.5 & sampler=$!
bench() {  # bench NAME LEVEL
  local name=$1 level=$2
  echo "== $name (CUPROBE_CONSOLE_PRINT_LEVEL=$level) $(date -u +%T)"; t=$(date +%s.%N)
  env ${level:+CUPROBE_CONSOLE_PRINT_LEVEL=$level} timeout 200 python3 bench/sweep.py --skip-compare --full \
    --slots 8 --out "$OUT/bench" > "$B/$name.txt" 2> "$B/$name.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$\|^host\|^sweep processes" "$B/$name.txt"; tail -2 "$B/$name.err"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$B/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench"
}
bench sanitizer-level-1 ""
bench fatal-1 fatal
bench sanitizer-level-2 ""
bench fatal-2 fatal
kill $sampler
tar czf "$OUT/benches.tgz" -C "$OUT" benches && rm -rf "$B"
echo "== done $(date -u +%T)"
