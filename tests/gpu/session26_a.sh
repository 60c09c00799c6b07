#!/usr/bin/env bash
# Next: does the GPU's time-slicing between contexts limit a K = 8 sweep? Session 15 found K = 12 and 16 slower than
# K = 8 with most of the host's cores idle and inferred (not measured) that what the sanitizer processes share and
# wait on is the GPU, which runs one process's context at a time, and its driver. CUDA's Multi-Process Service (MPS)
# runs every client's work in one server's context: if that inference is right, a sweep under MPS is faster and gains
# past K = 8. First a smoke test under MPS (is the sanitizer's target an MPS client at all; does initcheck still find
# the harness's planted reads and cuprobe's uninit-read its finding, with the confirmer's controls right), then
# rounds of the 384-case grid with spares ready, rotating who goes first, until AB_DEADLINE_S (default 330):
#   defaults   as `cuprobe sweep run` and the bench run today (K = 8, no MPS);
#   mps8       the same with an MPS control daemon up (started before the bench, so before its spares; quit after);
#   mps16      MPS at K = 16.
# Predicted (written before this call): more likely than not the sanitizer does not work under MPS (its target
# refuses the daemon, or runs outside it, or loses records): then the smoke test says which, and the mps rounds are
# either the defaults' numbers (run outside MPS: control.log shows no client of theirs) or fail. If it does work:
# mps8 10-25 % more cases per GPU-hour than the defaults and mps16 above mps8, every finding as without MPS. The
# defaults on an H200 (no H200 round of them since session 20): median 125,000-150,000 cases per GPU-hour.
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session26_a.sh
source tests/gpu/ab_round.sh  # starts the run: $OUT, the environment, the clock
MPS_LOG=/tmp/mps-log
mps_on() {
  mkdir -p "$MPS_LOG"
  CUDA_MPS_LOG_DIRECTORY=$MPS_LOG nvidia-cuda-mps-control -d || echo "mps: the control daemon did not start (rc=$?)"
}
mps_off() {
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
  for _ in $(seq 1 50); do pgrep -f nvidia-cuda-mps >/dev/null || return 0; sleep 0.2; done
  echo "mps: still running after quit: $(pgrep -af nvidia-cuda-mps | tr '\n' ' ')"
}
clients() { local n; n=$(grep -ci "new client" "$MPS_LOG/control.log" 2>/dev/null); echo "${n:-0}"; }

echo "== mps: $(command -v nvidia-cuda-mps-control || echo 'no nvidia-cuda-mps-control on PATH')"
command -v nvidia-cuda-mps-control > /dev/null || { ab_done; exit 0; }

# Smoke: the harness's planted uninitialized reads under initcheck, without MPS and with it; then cuprobe's own path.
nvcc -lineinfo -arch=sm_90 -I. -o /tmp/harness tests/gpu/programs/harness.cu || echo "harness build failed"
smoke() {  # NAME
  local dir=$OUT/smoke/$1; mkdir -p "$dir"
  timeout 120 "$CUPROBE_SANITIZER_PATH" --tool initcheck --print-limit 0 --xml --save "$dir/run.xml" \
    --error-exitcode 86 -- /tmp/harness uninit 1024 1000 > "$dir/stdout.txt" 2> "$dir/stderr.txt"
  echo "== smoke $1: exit=$? records=$(grep -c '<record>' "$dir/run.xml" 2>/dev/null || echo none)" \
    "summary: $(grep -h 'ERROR SUMMARY' "$dir/stdout.txt" | tail -1)"
  grep -hiE "mps|error|not supported" "$dir/stdout.txt" "$dir/stderr.txt" | grep -v "^=========     " | head -5
}
smoke bare
before=$(clients); mps_on; sleep 1
smoke mps
echo "mps clients during the harness smoke: $(( $(clients) - before ))"
echo "mps server list: $(echo get_server_list | nvidia-cuda-mps-control 2>&1 | tr '\n' ' ')"
before=$(clients)
timeout 180 python3 -m cuprobe.service.cli run uninit-read --tool initcheck --json > "$OUT/smoke/mps_uninit.json" \
  2> "$OUT/smoke/mps_uninit.err"
echo "== cuprobe run uninit-read under MPS: exit=$? clients=$(( $(clients) - before ))"
python3 - "$OUT/smoke/mps_uninit.json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as exc:
    print("  no result:", exc); raise SystemExit
print("  outcome", r.get("outcome"), "| findings", [(f.get("kind"), f.get("count"), f.get("confirmation")) for f in r.get("findings", [])])
print("  message", str(r.get("message"))[:300])
EOF
mps_off
cp -r "$MPS_LOG" "$OUT/smoke/mps-log-smoke"; rm -rf "$MPS_LOG"

ab_setting() {  # ROUND SETTING
  local c0
  case $2 in
    defaults) AB_SLOTS=8 ab_round "$1" "$2" ;;
    mps8|mps16)
      mps_on; sleep 0.5; c0=$(clients)
      AB_SLOTS=${2#mps} ab_round "$1" "$2"
      echo "  mps clients in this round: $(( $(clients) - c0 ))"
      mps_off ;;
  esac
}
rm -rf /tmp/cuprobe-sweep-bench-*
ab_rounds 330 defaults mps8 mps16
cp -r "$MPS_LOG" "$OUT/mps-log" 2>/dev/null
mps_off
ab_done
