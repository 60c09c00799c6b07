#!/usr/bin/env bash
# Session 29, call 4: the early torch import as it lands (--prefetch-torch, no value: the switch interval of call 2
# and the lower priority of call 3 changed nothing and were taken out), on every probe that imports torch.
# 1. The gpu tests of the early import and of the quick exit (tests/gpu/test_core_gpu.py), both sanitizers.
# 2. `cuprobe run` of the other probes whose parameters use torch (narrow-linear, bf16-matmul) under initcheck and
#    memcheck, early (the default) and late (CUPROBE_TORCH_PREFETCH=0): outcome, records and findings side by side.
# 3. The cold path, the defaults against the late import, rotating, until AB_DEADLINE_S (default 120).
# Predicted (written before this call): every test passes; each probe's early and late runs give the same outcome,
# records and findings, the early run's context holding torch_prefetch; the cold path as in calls 1-3 (the early
# import ahead in most rounds, about 7 % in the median).
# From the project root on the GPU box:  OUT=/tmp/out bash tests/gpu/session29_d.sh
COLD_SHOW="its run stage|before the first case|second thread|NOT RUN"
source tests/gpu/cold_round.sh  # starts the run: $OUT, the environment, the clock
(unset CUPROBE_SANITIZER_PATH; timeout 170 python3 -m pytest tests/gpu/test_core_gpu.py -m gpu -q -p no:cacheprovider \
  --timeout 120 -rA -k "early_torch or quick_exit" > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -8
for probe in narrow-linear bf16-matmul; do
  for tool in initcheck memcheck; do
    timeout 100 python3 -m cuprobe.service.cli run "$probe" --tool "$tool" --json > "$OUT/$probe-$tool-early.json" 2>> "$OUT/cli.err"
    e=$?
    CUPROBE_TORCH_PREFETCH=0 timeout 100 python3 -m cuprobe.service.cli run "$probe" --tool "$tool" --json \
      > "$OUT/$probe-$tool-late.json" 2>> "$OUT/cli.err"
    l=$?
    python3 - "$OUT/$probe-$tool-early.json" "$OUT/$probe-$tool-late.json" "$probe $tool exit $e/$l" <<'PY'
import json, sys
def said(path):
    try:
        r = json.load(open(path))
    except ValueError as exc:
        return {"unreadable": str(exc)}, None
    found = [(f["signature"], f["count"], f.get("confirmation")) for f in r.get("findings", [])]
    return {"outcome": r.get("outcome"), "records": r.get("records"), "findings": found,
            "cases": [(c["id"], c["passed"]) for c in r.get("cases", [])]}, r.get("probe_context", {}).get("torch_prefetch")
early, prefetch = said(sys.argv[1])
late, none = said(sys.argv[2])
print(f"{sys.argv[3]}: early {early['outcome'] if 'outcome' in early else early} records {early.get('records')} "
      f"findings {len(early.get('findings', []))}; same as late: {early == late}; torch_prefetch {prefetch} / {none}")
if early != late:
    print("  early:", early, "\n  late: ", late)
PY
  done
done
cold_setting() {
  case $2 in
    defaults) cold_round "$1" "$2" ;;
    late-import) cold_round "$1" "$2" CUPROBE_TORCH_PREFETCH=0 ;;
  esac
}
cold_rounds 120 late-import defaults  # round 1: defaults first
cold_done
