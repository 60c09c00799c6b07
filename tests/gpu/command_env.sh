#!/usr/bin/env bash
# What a `command` job's child sees under compute-sanitizer, and that a planted defect there is still found.
# From the project root on the GPU box:  source tests/gpu/setup_box.sh && bash tests/gpu/command_env.sh
# Writes to $OUT: command_env.log (this console), env-plain.txt (the shell's own environment),
# env-sanitizer-<v>.txt (what /usr/bin/env sees run directly under each compute-sanitizer), injected-<v>.txt
# (names the sanitizer added), env-cuprobe-<v>.json (the same child run as a service job's command: its result),
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
  # Only NAME=value lines: NVIDIA-PROCESS-TRACKING-CONFIGURATION's value spans several lines.
  names() { grep -E '^[A-Za-z_][A-Za-z0-9_-]*=' "$1" | cut -d= -f1 | sort -u; }
  comm -13 <(names "$OUT/env-plain.txt") <(names "$OUT/env-sanitizer-$v.txt") \
    | tee "$OUT/injected-$v.txt" | sed 's/^/   injected: /'
  echo "== the same child as a service job's command (memcheck; the worker's allowlisted environment, not trusted)"
  CUPROBE_SANITIZER_PATH=$san CUPROBE_COMMAND_ENABLED=1 CUPROBE_COMMAND_ALLOWLIST="$(readlink -f "$(command -v sh)"):$ENV_BIN" \
    CUPROBE_API_TOKEN=should-never-show-4412 CUDA_API_KEY=should-never-show-5521 \
    python3 - "$ENV_BIN" > "$OUT/env-cuprobe-$v.json" <<'PY'
import sys, tempfile
from pathlib import Path
from cuprobe.service.models import ProbeRequest, Tool
from cuprobe.service.probing.runner import run_probe
params = {"argv": ["sh", "-c", f"/tmp/harness ok >/dev/null; {sys.argv[1]}"], "expect_exit": None}
with tempfile.TemporaryDirectory() as tmp:  # trusted=False: exactly what a worker runs for a job
    result = run_probe(ProbeRequest(probe="command", tool=Tool.MEMCHECK, params=params), workdir=Path(tmp))
print(result.model_dump_json(indent=1))
PY
  echo "exit=$?"
  python3 - "$OUT/env-cuprobe-$v.json" "$OUT/injected-$v.txt" <<'PY'
import json, re, sys
from cuprobe.probes.allowed_env import allowed_name
result = json.load(open(sys.argv[1]))
lines = result["cases"][0]["observations"]["stdout_tail"].splitlines()
seen = {line.split("=", 1)[0] for line in lines if re.match(r"^[A-Za-z_][A-Za-z0-9_-]*=", line)}
injected = [n.strip() for n in open(sys.argv[2]) if n.strip()]
print("outcome:", result["outcome"], "-", result["message"])
print("child's variables:", ", ".join(sorted(seen)))
for name in injected:
    print(f"   {'kept   ' if name in seen else 'MISSING'} {name}")
print("   not on the allowlist:", sorted(n for n in seen if not allowed_name(n, sanitizer_injected=True)) or "none")
print("secret in result:", any(s in json.dumps(result) for s in ("should-never-show-4412", "should-never-show-5521")))
print("secret names in the child:", sorted({"CUPROBE_API_TOKEN", "CUDA_API_KEY"} & seen) or "none")
PY
done
echo "== pytest tests/gpu/test_command_env_gpu.py (planted oob in a command and in a command's child)"
timeout 300 python3 -m pytest tests/gpu/test_command_env_gpu.py -m gpu -q -p no:cacheprovider -rA 2>&1 | tail -n 30
