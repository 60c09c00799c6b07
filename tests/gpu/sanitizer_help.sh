#!/usr/bin/env bash
# Capture each installed compute-sanitizer's own help: --version, --help, and --tool T --help for every tool.
# Run on the GPU box from the project root:  source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/sanitizer_help.sh
# Writes $OUT/sanitizer_help/VERSION/{path.txt,version.txt,help.txt,help-TOOL.txt}; copy help.txt to
# tests/data/captures/VERSION/help.txt (cuprobe's option checks are tested against those files).
set -u
OUT=${OUT:-/tmp/out}
H="$OUT/sanitizer_help"; mkdir -p "$H"
sanitizers=()
for s in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer \
         $(python3 -c 'from cuprobe.service.sanitizer.locate import _wheel_binaries as w; print(*w())' 2>/dev/null); do
  [ -x "$s" ] && sanitizers+=("$(readlink -f "$s")")
done
for san in $(printf '%s\n' "${sanitizers[@]}" | sort -u); do
  ver=$("$san" --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -1)
  d="$H/${ver:-unknown}"; mkdir -p "$d"
  echo "$san" > "$d/path.txt"
  "$san" --version > "$d/version.txt" 2>&1
  "$san" --help > "$d/help.txt" 2>&1
  for tool in memcheck racecheck initcheck synccheck; do
    "$san" --tool "$tool" --help > "$d/help-$tool.txt" 2>&1
  done
  echo "captured $san ($ver): $(wc -l < "$d/help.txt") help lines"
done
