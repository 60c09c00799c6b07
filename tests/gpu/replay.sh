#!/usr/bin/env bash
# replay on the H200: a known nondeterministic CUDA op named as the first diverging tensor, clean with
# deterministic algorithms, the digest overhead table, Triton autotune choices per process (A1) and an
# autotune cache that stays empty (A2). About 3 minutes. Run from the project root there:
#   source tests/gpu/setup_box.sh > "$OUT/setup.log" 2>&1 && bash tests/gpu/replay.sh
# Writes $OUT/replay.log (this console) and $OUT/replay/<step>/{cmd.txt,stdout.txt,stderr.txt,exit_code,wall_s,
# result.json,replay-growth.svg}.
set -u
OUT=${OUT:-/tmp/out}
HARD_S=${HARD_S:-420}
work=$OUT/replay; rm -rf "$work"; mkdir -p "$work"
exec > >(tee "$OUT/replay.log") 2>&1
export PYTHONUNBUFFERED=1
summary=()

echo "== banner"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
python3 -c 'import triton; print("triton", triton.__version__)' || echo "triton: not importable"
python3 -c 'import matplotlib; print("matplotlib", matplotlib.__version__)' || echo "matplotlib: not importable"

# run NAME LIMIT_S PARAMS [VAR=VALUE ...]: one replay probe run, bare, and a one-screen account of its result.
run() {
  local name=$1 limit=$2 params=$3; shift 3
  local left=$((HARD_S - SECONDS))
  if ((left < 20)); then summary+=("$(printf '%-26s %s' "$name" "skipped: time budget spent")"); return; fi
  ((limit > left)) && limit=$left
  local dir="$work/$name"; mkdir -p "$dir"
  local cmd=(python3 -m probes replay --tool none --params "$params" --out "$dir/result.json")
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
    print("INCOMPLETE:", (r.get("unavailable") or (r.get("error") or "").strip().splitlines()[-1:] or [""])[-1][:300])
    sys.exit()
c = r["cases"][0]
o = c["observations"]
print(f"complete; {o['records'][0]} records over {o['steps'][0]} steps per process; findings: {len(c['findings'])}")
for f in c["findings"]:
    print(f"  finding [{f['seen'] or '-'}] {f['signature']}: {f['message'][:400]}")
for comp in o.get("comparisons", []):
    rows = " ".join(f"s{g['step']}:{g['diverging']}/{g['tensors']}" for g in comp["growth"])
    print(f"  process {comp['process']} vs 0, diverging/tensors per step: {rows}")
if "first_divergence_diff" in o:
    print("  first diverging tensor in full:", o["first_divergence_diff"])
if "second_opinion" in o:
    print("  second opinion:", o["second_opinion"])
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

PROGRAMS=$(pwd)/tests/gpu/programs
# 1. Prediction: the BucketMix layer (index_add_ on float32, atomics) diverges in its forward output at step 1,
#    in 2/2 comparisons; everything downstream diverges after it.
run index_add 120 '{"example":"transformer","device":"cuda","example_plant":"index-add","processes":3,"example_steps":2,"second_opinion":true}'
# 2. Prediction: clean — index_add_ has a deterministic CUDA path once deterministic algorithms are on.
run index_add_deterministic 90 '{"example":"transformer","device":"cuda","example_plant":"index-add","processes":2,"example_steps":2,"deterministic_algorithms":true}'
# 3. The premerge suite's entry: the same transformer without the planted layer (attention backward may still vary).
run transformer 90 '{"example":"transformer","device":"cuda","processes":2,"example_steps":2}'
# 4. Digest overhead per step on the H200 (goal < 1.2x) and on this machine's CPU.
echo "== overhead"
timeout 120 python3 bench/replay.py --device cuda --steps 20 --rounds 5 | tee "$work/overhead-cuda.txt"
timeout 120 python3 bench/replay.py --device cpu --steps 3 --rounds 3 | tee "$work/overhead-cpu.txt"
# 5. A1: split-K configs chosen per process (the choice was stable over 8 processes before: a diff may be empty).
run splitk_choices 120 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":3}"
# 6. A2 controls: a persistent cache in a writable directory fills (no finding) ...
run splitk_cache_ok 90 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"persistent_autotune\":true}"
# ... a cache directory that cannot be written (under /proc even root cannot create it): A2, or the reason it could not run ...
run splitk_cache_unwritable 90 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"persistent_autotune\":true,\"triton_cache_dir\":\"/proc/cuprobe-autotune-cache\"}"
# ... and a cache whose autotune writes are dropped (as on a read-only or full volume, for root too): A2.
run splitk_cache_dropped 90 "{\"entry\":\"replay_splitk:main\",\"cwd\":\"$PROGRAMS\",\"device\":\"cuda\",\"processes\":2,\"persistent_autotune\":true}" \
  TRITON_CACHE_MANAGER=replay_splitk:DropAutotuneResults PYTHONPATH="$PROGRAMS:$(pwd)"

echo "== summary"
printf '%s\n' "${summary[@]}"
