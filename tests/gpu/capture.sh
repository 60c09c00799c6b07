#!/usr/bin/env bash
# Capture real compute-sanitizer output on the GPU box for the parser/classifier tests (tests/data/captures).
# Run there from the project root:  bash tests/gpu/capture.sh
# Writes $OUT/captures.tgz (one folder per sanitizer version and case: cmd.txt, stdout.txt, stderr.txt,
# exit_code, wall_s, run.xml) and $OUT/capture.log.
set -u
OUT=${OUT:-/tmp/out}
work=/tmp/captures; rm -rf "$work"; mkdir -p "$work" "$OUT"
exec > >(tee "$OUT/capture.log") 2>&1
echo "== banner"; nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv; nvcc --version | tail -2
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || { echo "harness build failed"; exit 1; }
sanitizers=()
for s in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer; do
  [ -x "$s" ] && sanitizers+=("$s")
done
# one case: NAME TOOL "EXTRA FLAGS" PROGRAM ARGS...
run_case() {
  local name=$1 tool=$2 extra=$3; shift 3
  local dir="$work/$ver/$name"; mkdir -p "$dir"
  local cmd=("$san" --tool "$tool" $extra --xml --save "$dir/run.xml" --error-exitcode 86 -- "$@")
  printf '%q ' "${cmd[@]}" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  local t0=$(date +%s.%N)
  timeout 300 "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"
  echo $? > "$dir/exit_code"
  python3 -c "import sys;print(round(float(sys.argv[2])-float(sys.argv[1]),2))" "$t0" "$(date +%s.%N)" > "$dir/wall_s"
  printf '%-8s %-34s exit=%-4s xml=%-9s wall=%ss\n' "$ver" "$name" "$(cat "$dir/exit_code")" \
    "$(stat -c %s "$dir/run.xml" 2>/dev/null || echo none)" "$(cat "$dir/wall_s")"
}
for san in "${sanitizers[@]}"; do
  ver=$("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -1)
  mkdir -p "$work/$ver"; "$san" --version > "$work/$ver/version.txt"; "$san" --help > "$work/$ver/help.txt" 2>&1
  echo "$san" > "$work/$ver/path.txt"
  P0="--print-limit 0"
  run_case initcheck_uninit initcheck "$P0" /tmp/harness uninit 1024 1000
  run_case initcheck_many initcheck "$P0" /tmp/harness uninit 300 0
  run_case initcheck_many_default_limit initcheck "" /tmp/harness uninit 300 0
  run_case initcheck_ok initcheck "$P0" /tmp/harness ok
  run_case memcheck_oob memcheck "$P0" /tmp/harness oob
  run_case memcheck_oob_prefix memcheck "$P0 --prefix cs:" /tmp/harness oob  # a log written with --prefix
  run_case memcheck_oob_then_more memcheck "$P0" /tmp/harness oob_then_more
  run_case memcheck_leak_api memcheck "$P0 --leak-check full" /tmp/harness leak_api
  run_case memcheck_ok memcheck "$P0" /tmp/harness ok
  run_case memcheck_race memcheck "$P0" /tmp/harness race
  run_case racecheck_race_analysis racecheck "$P0 --racecheck-report analysis" /tmp/harness race
  run_case racecheck_race_hazard racecheck "$P0 --racecheck-report hazard" /tmp/harness race
  run_case racecheck_sound racecheck "$P0" /tmp/harness sound
  run_case synccheck_syncwarp synccheck "$P0" /tmp/harness syncwarp
  run_case synccheck_ok synccheck "$P0" /tmp/harness sound
  run_case memcheck_not_cuda memcheck "$P0" /bin/true
  run_case memcheck_missing_program memcheck "$P0" /nonexistent/program
  run_case memcheck_kill memcheck "$P0" /tmp/harness kill
  run_case memcheck_segv memcheck "$P0" /tmp/harness segv
  run_case memcheck_abort memcheck "$P0" /tmp/harness abort
  run_case memcheck_exit3 memcheck "$P0" /tmp/harness exit3
  run_case initcheck_filtered initcheck "$P0 --kernel-name kns=double_all" /tmp/harness uninit 1024 1000
  # the probes themselves, through pycuda (python -m cuprobe.probes), as cuprobe runs them
  for tool in initcheck memcheck racecheck synccheck; do
    run_case "probe_uninit-read_$tool" $tool "$P0" python3 -m cuprobe.probes uninit-read --tool $tool \
      --params '{"n":1024,"k":1000}' --out "$work/$ver/uninit_$tool.json"
    for defect in oob race syncwarp sound; do
      run_case "probe_planted-${defect}_$tool" $tool "$P0" python3 -m cuprobe.probes planted --tool $tool \
        --params "{\"defect\":\"$defect\"}" --out "$work/$ver/planted_${defect}_$tool.json"
    done
  done
done
echo "== bare probe"; python3 -m cuprobe.probes uninit-read --out /tmp/bare.json; echo "exit=$?"; cat /tmp/bare.json | head -40
tar -C "$work" -czf "$OUT/captures.tgz" .
ls -la "$OUT"
