#!/usr/bin/env bash
# The core on a GPU machine, in one command: the core's GPU tests on both sanitizers, the CLI on uninit-read,
# and every run's artifacts kept as test data. From the project root on the box:
#   bash tests/gpu/core.sh
# Writes to $OUT: core.log (all output, with setup's version banner first when piped in), core.tgz (artifacts).
set -u
OUT=${OUT:-/tmp/out}; keep=/tmp/core-keep; rm -rf "$keep"; mkdir -p "$keep" "$OUT"
exec > >(tee -a "$OUT/core.log") 2>&1
export PYTHONUNBUFFERED=1
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi > "$keep/nvidia-smi.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$keep/nvidia-smi-query.txt"
echo "== cuprobe doctor"; python3 -m cuprobe.service.cli doctor; echo "exit=$?"
echo "== pytest tests/gpu (both sanitizers)"
CUPROBE_GPU_KEEP="$keep/pytest" timeout 420 python3 -m pytest tests/gpu -m gpu -q -p no:cacheprovider --timeout 120 \
  -k "not catalog" -rA 2>&1 | tail -n 80
for san in /usr/local/cuda/bin/compute-sanitizer /tmp/site/nvidia/cu13/bin/compute-sanitizer; do
  [ -x "$san" ] || continue
  v=$($san --version | sed -n 's/.*Version \([0-9.]*\).*/\1/p')
  echo "== cuprobe run uninit-read --tool initcheck (compute-sanitizer $v); expected: 1 finding, count 1024-1000=24"
  CUPROBE_SANITIZER_PATH=$san python3 -m cuprobe.service.cli run uninit-read --tool initcheck --workdir "$keep/cli-$v-initcheck"
  echo "exit=$?"
  CUPROBE_SANITIZER_PATH=$san python3 -m cuprobe.service.cli run uninit-read --tool initcheck --json > "$keep/cli-$v-initcheck.json"
  echo "json exit=$?"
  echo "== cuprobe run uninit-read --tool memcheck (compute-sanitizer $v); expected: clean"
  CUPROBE_SANITIZER_PATH=$san python3 -m cuprobe.service.cli run uninit-read --tool memcheck --workdir "$keep/cli-$v-memcheck"
  echo "exit=$?"
done
tar -C "$keep" -czf "$OUT/core.tgz" .
ls -la "$OUT"
