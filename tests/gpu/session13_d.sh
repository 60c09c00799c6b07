#!/usr/bin/env bash
# The sanitizer's demangler off for runs that name only C-linkage kernels (service/probing/demangle.py), on the H200:
# (1) captures for the CPU tests: narrow-matmul (n = 1, 2, 3, 31, 33; unguarded and guarded; initcheck, device
# backtraces) run directly under compute-sanitizer with --demangle no and with its default, and
# tests/gpu/programs/mangled_uninit.cu (a C++ template kernel reading unwritten memory) both ways; the lines of the
# two narrow-matmul XMLs compared; (2) bench/sweep.py on the 384-case grid at K = 8 and 4, cold and with spares, with
# the demangler on (CUPROBE_SKIP_DEMANGLING=0, as before), off (the new default), and on again at K = 8.
# Predicted (session 13): the narrow-matmul XMLs differ only in addresses; the mangled program's records name
# _ZN4demo5scaleIfEEvPKT_PS1_iS1_ with --demangle no; the grid at K = 8 about 20 % faster with the demangler off
# (host CPU is the limit at K = 8: 14.5 of 16 cores busy in session 13's record_contention run).
# About 5 minutes. From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session13_d.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPROBE_SANITIZER_PATH=/usr/local/cuda/bin/compute-sanitizer CUPROBE_STALL_S=30
CS=$CUPROBE_SANITIZER_PATH
nproc; uptime; "$CS" --version | tail -1
C="$OUT/captures"; mkdir -p "$C"
capture() {  # capture NAME DEMANGLE(no|default) -- target...
  local name=$1 mode=$2; shift 3
  local d="$C/$name"; mkdir -p "$d"
  local extra=(); [ "$mode" = no ] && extra=(--demangle no)
  local cmd=("$CS" --tool initcheck --print-limit 0 --xml --save "$d/run.xml" --error-exitcode 86 --show-backtrace device "${extra[@]}" -- "$@")
  printf '%q ' "${cmd[@]}" > "$d/cmd.txt"; echo >> "$d/cmd.txt"
  "${cmd[@]}" > "$d/stdout.txt" 2> "$d/stderr.txt"; echo $? > "$d/exit_code"
  "$CS" --version > "$d/version.txt"
  echo "$name: exit $(cat "$d/exit_code"), $(grep -c '<record>' "$d/run.xml") records, funcs: $(grep -o '<func>[^<]*</func>' "$d/run.xml" | sort -u | tr '\n' ' ')"
}
P='{"m":32,"k":32,"tile":32,"n":[1,2,3,31,33],"variants":["unguarded","guarded"]}'
for mode in no default; do
  capture "narrow-matmul-demangle-$mode" $mode -- python3 -m cuprobe.probes narrow-matmul --tool initcheck --params "$P" \
    --out "$C/narrow-matmul-demangle-$mode/result.json"
done
python3 - "$C" <<'PY'
import sys, collections, re
from pathlib import Path
c = Path(sys.argv[1])
def lines(name):
    text = (c / name / "run.xml").read_text()
    return collections.Counter(l.strip() for l in text.splitlines() if not re.search(r"<(address|pc)>", l))
a, b = lines("narrow-matmul-demangle-no"), lines("narrow-matmul-demangle-default")
print(f"narrow-matmul XML lines (addresses and pcs left out): {sum(a.values())} and {sum(b.values())}; differing: {sum(((a - b) + (b - a)).values())}")
for line, n in list(((a - b) + (b - a)).items())[:10]:
    print("  differs:", n, line)
PY
nvcc -lineinfo -o /tmp/mangled_uninit tests/gpu/programs/mangled_uninit.cu && for mode in no default; do
  capture "mangled-demangle-$mode" $mode -- /tmp/mangled_uninit
done
tar czf "$OUT/captures.tgz" -C "$OUT" captures && rm -rf "$C"
# compile the probe's and the confirmer's kernels first, so that no bench row below pays for it
python3 -m cuprobe.probes narrow-matmul --tool none --params "$P" --confirm-control --out /tmp/warm.json > /dev/null 2>&1
echo "kernels compiled: rc=$?"
python3 tests/gpu/cpu_sample.py "$OUT/cpu.tsv" --interval 0.5 & sampler=$!
bench() {
  local name=$1; shift
  echo "== $name: bench/sweep.py $* $(date -u +%T)"; t=$(date +%s.%N)
  timeout 300 python3 bench/sweep.py "$@" --out "$OUT/bench" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "rc=$?"; grep -v "^report\|^no report\|^$" "$OUT/$name.txt"
  echo "-- cpu:"; python3 tests/gpu/cpu_sample.py --summary "$OUT/cpu.tsv" --from "$t" --to "$(date +%s.%N)"
  rm -rf "$OUT/bench" "$OUT/$name.err"
}
CUPROBE_SKIP_DEMANGLING=0 bench demangler-on --skip-compare --full --slots 8,4
bench demangler-off --skip-compare --full --slots 8,4
CUPROBE_SKIP_DEMANGLING=0 bench demangler-on-again --skip-compare --full --slots 8
kill $sampler
echo "== done $(date -u +%T)"
