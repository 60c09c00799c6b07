#!/usr/bin/env bash
# Capture what compute-sanitizer says about each kernel launch with --dump-kernel-launches (2026.4 has it, 2025.3
# does not), to find whether a kernel filter that matches nothing can be told from a clean run: today cuprobe
# cannot (docs/own-code.md). The harness's uninit case launches its kernels; filters: none, one that matches
# (kns=double_all), one that matches nothing (kns=no_such_kernel); and the last without the dump, under both
# sanitizers, as the clean-looking run it is. Predicted: 2026.4 prints one line per launch naming the kernel and
# whether it was filtered, on stdout and as info-level records in the --save XML; the no-match run has every launch
# marked filtered and no error; 2025.3 refuses the option (exit 1, "unrecognised option"). Writes
# $OUT/dump_launches.tgz (one folder per version and case: cmd.txt, stdout.txt, stderr.txt, exit_code, run.xml).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session19_b.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
work=/tmp/dump_launches; rm -rf "$work"; mkdir -p "$work"
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || { echo "harness build failed"; exit 1; }
run_case() {  # NAME "EXTRA FLAGS"
  local dir="$work/$ver/$1"; mkdir -p "$dir"
  local cmd=("$san" --tool "${TOOL:-initcheck}" --print-limit 0 $2 --xml --save "$dir/run.xml" --error-exitcode 86 -- \
    /tmp/harness uninit 1024 1000)
  printf '%q ' "${cmd[@]}" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  timeout 120 "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"; echo $? > "$dir/exit_code"
  echo "== $ver $1 exit=$(cat "$dir/exit_code") xml=$(stat -c %s "$dir/run.xml" 2>/dev/null || echo none)"
  grep -v "^=========     " "$dir/stdout.txt" | grep -iE "launch|filter|kernel|summary|unrecogn|option" | head -12
  [ -s "$dir/run.xml" ] && grep -oE "<(kind|what|level)>[^<]*" "$dir/run.xml" | sort | uniq -c | head -8
  tail -2 "$dir/stderr.txt"
}
for san in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer \
    $(python3 -c 'import nvidia, pathlib; print(*pathlib.Path(nvidia.__path__[0]).glob("*/bin/compute-sanitizer"))' 2>/dev/null); do
  [ -x "$san" ] || continue
  ver=$("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -1)
  [ -d "$work/$ver" ] && continue
  mkdir -p "$work/$ver"; "$san" --version > "$work/$ver/version.txt"
  run_case dump_nofilter "--dump-kernel-launches"
  run_case dump_filter_match "--dump-kernel-launches --kernel-name kns=double_all"
  run_case dump_filter_nomatch "--dump-kernel-launches --kernel-name kns=no_such_kernel"
  run_case filter_nomatch "--kernel-name kns=no_such_kernel"
  # Session 21: whether --print-level warn keeps the launches out of the error count but in the saved XML, and
  # what memcheck's summary counts with the dump on.
  run_case dump_filter_match_warn "--dump-kernel-launches --print-level warn --kernel-name kns=double_all"
  run_case dump_filter_nomatch_warn "--dump-kernel-launches --print-level warn --kernel-name kns=no_such_kernel"
  TOOL=memcheck run_case memcheck_dump_filter_match "--dump-kernel-launches --kernel-name kns=double_all"
done
tar czf "$OUT/dump_launches.tgz" -C "$work" .
