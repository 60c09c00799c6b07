#!/usr/bin/env bash
# replay on the H200, in order of importance (about 3.5 minutes; HARD_S, default 235, stops it starting new steps):
#   1. the batched digests on CUDA equal the per-tensor ones (tests/unit/probes/test_replay_digest.py, cuda cases);
#   2. the digest overhead table on the GPU and on this machine's CPU (bench/replay.py; goal < 1.2x);
#   3. index_add_ (atomics) named as the first diverging tensor, and the same program clean with deterministic
#      algorithms;
#   4. A1: a planted per-process autotune choice in Triton's real autotuner, recorded and diffed;
#   5. A2: a persistent autotune cache in a directory that cannot be created (under /proc, for root too): a finding;
#      and its control: in a fresh writable directory the cache fills and the second process loads the choice.
# Run from the project root there:
#   source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/replay.sh
# Writes $OUT/replay.log (this console) and $OUT/replay/<step>/{cmd.txt,stdout.txt,stderr.txt,exit_code,wall_s,
# result.json}, $OUT/replay/digests-cuda.txt and $OUT/replay/overhead-{cuda,cpu}.txt.
set -u
OUT=${OUT:-/tmp/out}
HARD_S=${HARD_S:-235}
SKIP=${SKIP:-}  # names to leave out: digests_cuda, overhead_cpu, or a run step's name (e.g. index_add)
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
work=$OUT/replay; rm -rf "$work"; mkdir -p "$work"
exec > >(tee "$OUT/replay.log") 2>&1
export PYTHONUNBUFFERED=1
summary=()

echo "== banner"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
python3 -c 'import triton; print("triton", triton.__version__)' || echo "triton: not importable"

# left NEED_S: true when at least NEED_S seconds of the budget are left (else the step is listed as skipped).
left() { (( HARD_S - SECONDS >= $1 )); }

# run NAME LIMIT_S PARAMS [VAR=VALUE ...]: one replay probe run, bare, and a one-screen account of its result.
run() {
  local name=$1 limit=$2 params=$3; shift 3
  if skipped "$name"; then summary+=("$(printf '%-26s %s' "$name" "skipped (SKIP)")"); return; fi
  if ! left 20; then summary+=("$(printf '%-26s %s' "$name" "skipped: time budget spent")"); return; fi
  local rest=$((HARD_S - SECONDS)); ((limit > rest)) && limit=$rest
  local dir="$work/$name"; mkdir -p "$dir"
  local cmd=(python3 -m cuprobe.probes replay --tool none --params "$params" --out "$dir/result.json")
  printf '%q ' env "$@" "${cmd[@]}" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  echo "== $name (limit ${limit}s): $(cat "$dir/cmd.txt")"
  local t0=$SECONDS
  timeout -k 10 "$limit" env "$@" "${cmd[@]}" > "$dir/stdout.txt" 2> "$dir/stderr.txt"
  local rc=$?
  echo "$rc" > "$dir/exit_code"; echo $((SECONDS - t0)) > "$dir/wall_s"
  local state
  state=$(python3 - "$dir/result.json" <<'PY' 2>&1 || echo "no result.json"
import json, sys
r = json.load(open(sys.argv[1]))
if not r["complete"]:
    why = r.get("unavailable") or ((r.get("error") or "").strip().splitlines() or [""])[-1]
    print("INCOMPLETE:", why[:300])
    sys.exit()
c = r["cases"][0]
o = c["observations"]
kinds = sorted({f["kind"] for f in c["findings"]})
print(f"complete; records per process {o.get('records')}, steps {o.get('steps')}; findings: {len(c['findings'])} "
      f"{kinds}")
for f in c["findings"]:
    print(f"  finding [{f['seen'] or '-'}] {f['signature']}: {f['message'][:400]}")
for comp in o.get("comparisons", []):
    rows = " ".join(f"s{g['step']}:{g['diverging']}/{g['tensors']}" for g in comp["growth"])
    print(f"  process {comp['process']} vs 0, diverging/tensors per step: {rows}")
if "first_divergence_diff" in o:
    print("  first diverging tensor in full:", o["first_divergence_diff"])
if "second_opinion" in o:
    print("  second opinion:", o["second_opinion"])
if "program_error" in o:
    print("  program error:", o["program_error"].splitlines()[0][:300])
tune = o.get("autotune", {})
for i, tuners in enumerate(tune.get("processes", [])):
    for t in tuners:
        print(f"  autotune p{i}: {t['kernel']} benchmarked={t['benchmarked']} cache_results={t['cache_results']} "
              f"choices={t['choices']}")
if tune:
    print(f"  autotune differ: {tune['differ']}; cache files: {tune['cache_files']}")
PY
)
  echo "$state"
  summary+=("$(printf '%-26s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(echo "$state" | head -1)")")
  tail -3 "$dir/stderr.txt" | sed 's/^/   stderr: /'
}

# 1. Prediction: every case passes, the cuda ones included (batched == per-tensor, flips and swaps seen, NaN kept).
if ! skipped digests_cuda; then
echo "== digests on CUDA"
t0=$SECONDS
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/unit/probes/test_replay_digest.py 2>&1 \
  | tee "$work/digests-cuda.txt" | tail -4
summary+=("$(printf '%-26s %4ss  %s' digests_cuda "$((SECONDS - t0))" "$(tail -1 "$work/digests-cuda.txt")")")
fi

# 2. Prediction: GPU `replay digests` about 1.4-1.5x (1.64x measured before the Python per record was trimmed;
#    `hooks only` about 1.3x: the goal of 1.2x stays missed on this 5.7 ms step); CPU under 1.2x.
echo "== overhead"
if left 60; then
  timeout 75 python3 bench/replay.py --device cuda --steps 20 --rounds 5 | tee "$work/overhead-cuda.txt"
  skipped overhead_cpu || timeout 90 python3 bench/replay.py --device cpu --steps 3 --rounds 3 | tee "$work/overhead-cpu.txt"
  summary+=("$(printf '%-26s %s | %s' overhead "GPU: $(tail -1 "$work/overhead-cuda.txt")" \
    "CPU: $(tail -1 "$work/overhead-cpu.txt")")")
else
  summary+=("$(printf '%-26s %s' overhead "skipped: time budget spent")")
fi

PROGRAMS=$(pwd)/tests/gpu/programs
# 3. Prediction: the BucketMix layer (index_add_ on float32, atomics) diverges in its forward output at step 1
#    (replay|mix|output|forward, 1/1); everything downstream diverges after it. With deterministic algorithms: clean.
run index_add 75 '{"example":"transformer","device":"cuda","example_plant":"index-add","processes":2,"example_steps":2}'
run index_add_deterministic 50 '{"example":"transformer","device":"cuda","example_plant":"index-add","processes":2,"example_steps":2,"deterministic_algorithms":true}'
# 4. Prediction: replay-autotune|_splitk_kernel, SPLIT_K 1 in process 0 and 4 in process 1 at key (256, 256, 8192,
#    ...), and a replay-divergence of the SplitK output (the split-K sums round differently).
run splitk_planted 50 "{\"entry\":\"replay_splitk:planted\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"capture\":false}"
# 5. Prediction: replay-autotune-cache|unwritable naming the directory; the program fails when Triton first writes
#    its cache (mkdir under /proc), and the finding says so.
run splitk_cache_unwritable 40 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"persistent_autotune\":true,\"triton_cache_dir\":\"/proc/cuprobe-autotune-cache\"}"
#    Control. Prediction: clean; *.autotune.json files in the cache; process 1 benchmarked=False (loaded p0's choice).
run splitk_cache_ok 60 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"persistent_autotune\":true}"

echo "== summary (${SECONDS}s)"
printf '%s\n' "${summary[@]}"
