#!/usr/bin/env bash
# The torch pytest file of own_code.sh (tests/gpu/programs/own_code/test_torch_planted.py), one process per test
# under memcheck, with what each layer sees kept, so that a test process's exit is explained:
#   1. pytest bare (no sanitizer), 2. compute-sanitizer directly on one test, 3. `cuprobe exec` on one test,
#   4. the suite through `cuprobe gate --local` (the run dirs of every test are kept in torch-runs.tgz).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/own_code_torch.sh   (about 2 minutes)
set -uo pipefail
OUT=${OUT:-/tmp/out}
O="$OUT/own_code_torch"; mkdir -p "$O"
exec > >(tee "$O/own_code_torch.log") 2>&1
export PYTHONUNBUFFERED=1 COLUMNS=200
if command -v cuprobe >/dev/null; then CUPROBE=(cuprobe); else CUPROBE=(python3 -m cuprobe.service.cli.main); fi
CS=${CS:-$(python3 -c 'from cuprobe.service.sanitizer.locate import find_sanitizer; print(find_sanitizer())' 2>/dev/null)}
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
P=/tmp/own-torch-project; rm -rf "$P"; mkdir -p "$P"; cp tests/gpu/programs/own_code/test_torch_planted.py "$P/"
ONE=test_torch_planted.py::test_add_is_clean
echo "== sanitizer: $CS ($("$CS" --version | tail -1)); python: $(command -v python3); pytest: $(python3 -m pytest --version 2>&1)"
echo "== env a test process inherits that may matter"
env | grep -E '^(PYTHONPATH|PYTEST|CUDA|PYTORCH|LD_)' | sort

echo "== 1. pytest bare, the whole file"
(cd "$P" && timeout 120 python3 -m pytest -p no:cacheprovider -q test_torch_planted.py) > "$O/1-bare.txt" 2>&1
echo "rc=$?"; tail -15 "$O/1-bare.txt"

echo "== 2. compute-sanitizer memcheck directly, $ONE"
(cd "$P" && PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 "$CS" --tool memcheck \
   python3 -m pytest -p no:cacheprovider -q "$ONE") > "$O/2-direct.txt" 2>&1
echo "rc=$?"; tail -25 "$O/2-direct.txt"

echo "== 3. cuprobe exec memcheck, $ONE"
"${CUPROBE[@]}" exec -t memcheck --any-exit --cwd "$P" --workdir "$O/exec-one" --json \
  -- python3 -m pytest -p no:cacheprovider -q "$ONE" > "$O/3-exec.json" 2> "$O/3-exec.err"
echo "rc=$?"
python3 - "$O/3-exec.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as exc:
    print("no JSON:", exc); sys.exit()
print(r["outcome"], "|", r["message"][:300]); print("command:", r.get("command"))
PY
for f in stdout.txt stderr.txt; do echo "-- $f"; tail -25 "$O/exec-one/$f" 2>/dev/null; done

echo "== 4. the suite, one process per test, through cuprobe gate --local"
cat > "$O/torch.toml" <<TOML
name = "torch-own-tests"

[[probe]]
name = "memcheck-control"
probe = "planted"
tool = "memcheck"
params = { defect = "oob" }
control = true

[[test]]
name = "torch-tests"
kind = "pytest"
tool = "memcheck"
cwd = "$P"
paths = ["test_torch_planted.py"]
env = { PYTORCH_NO_CUDA_MEMORY_CACHING = "1" }
timeout_s = 300
TOML
rm -rf /tmp/own-torch
"${CUPROBE[@]}" gate "$O/torch.toml" --local --workdir /tmp/own-torch --junit "$O/torch.junit.xml" \
  --summary "$O/torch.md" 2>&1 | tee "$O/torch.txt"
echo "gate rc=${PIPESTATUS[0]} (expect 1: a new finding in test_planted_oob_write only)"
for d in $(find /tmp/own-torch -name stderr.txt | sort); do echo "-- $d"; tail -8 "$d"; done
find /tmp/own-torch -name run.xml -size +1M -exec gzip -f {} \;
tar -czf "$O/torch-runs.tgz" -C /tmp own-torch 2>/dev/null
