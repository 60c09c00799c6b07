#!/usr/bin/env bash
# What a `command` job's child sees under compute-sanitizer, and that a planted defect there is still found.
# From the project root on the GPU box:  source tests/gpu/setup_box.sh && bash tests/gpu/command_env.sh
# Writes to $OUT: command_env.log (this console), env-plain.txt (the shell's own environment),
# env-sanitizer-<v>.txt (what /usr/bin/env sees run directly under each compute-sanitizer), injected-<v>.txt
# (names the sanitizer added), env-cuprobe-<v>.json (the same child run as a cuprobe command job: its result),
# and the pytest run of tests/gpu/test_command_env_gpu.py.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/command_env.log") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || echo "harness build failed"
env | sort > "$OUT/env-plain.txt"
ENV_BIN=$(readlink -f /usr/bin/env)
for san in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer; do
  [ -x "$san" ] || continue
  v=$($san --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p')
  echo "== compute-sanitizer $v ($san)"
  # The harness's child: sh -c runs env after a CUDA program, so the sanitizer has attached to the tree.
  "$san" --tool memcheck --print-limit 0 -- sh -c "/tmp/harness ok >/dev/null; $ENV_BIN" \
    | grep -v '^=========' | sort > "$OUT/env-sanitizer-$v.txt"
  comm -13 <(cut -d= -f1 "$OUT/env-plain.txt" | sort -u) <(cut -d= -f1 "$OUT/env-sanitizer-$v.txt" | sort -u) \
    | tee "$OUT/injected-$v.txt" | sed 's/^/   injected: /'
  echo "== the same child as a cuprobe command job (memcheck, allowlisted environment)"
  CUPROBE_SANITIZER_PATH=$san CUPROBE_COMMAND_ENABLED=1 CUPROBE_COMMAND_ALLOWLIST="$(readlink -f "$(command -v sh)"):$ENV_BIN" \
    CUPROBE_API_TOKEN=should-never-show-4412 \
    python3 -m service.cli run command --tool memcheck --json \
      -p "argv=[\"sh\", \"-c\", \"/tmp/harness ok >/dev/null; $ENV_BIN\"]" -p expect_exit=null \
      > "$OUT/env-cuprobe-$v.json"
  echo "exit=$?"
  python3 - "$OUT/env-cuprobe-$v.json" "$OUT/injected-$v.txt" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
seen = {line.split("=", 1)[0] for line in result["cases"][0]["observations"]["stdout_tail"].splitlines() if "=" in line}
injected = [n.strip() for n in open(sys.argv[2]) if n.strip()]
print("outcome:", result["outcome"], "-", result["message"])
print("child's variables:", ", ".join(sorted(seen)))
for name in injected:
    print(f"   {'kept   ' if name in seen else 'MISSING'} {name}")
print("secret in result:", "should-never-show-4412" in json.dumps(result))
PY
done
echo "== pytest tests/gpu/test_command_env_gpu.py (planted oob in a command and in a command's child)"
timeout 300 python3 -m pytest tests/gpu/test_command_env_gpu.py -m gpu -q -p no:cacheprovider -rA 2>&1 | tail -n 30
