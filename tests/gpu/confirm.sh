#!/usr/bin/env bash
# Confirmed findings on the H200, one batched script (about 6 minutes; docs/confirmation.md has the predictions).
# Run from the project root on the GPU box:  bash tests/gpu/confirm.sh     (logs and results under $OUT)
# Steps, each with its own limit, skipped (and said so) when the HARD_S budget is spent:
#   uninit-read -> consequential; narrow-matmul unguarded -> benign in every case; bf16-matmul torch-cuda at its
#   defaults -> blind-spot; the A3 probe (narrow-linear) with torch's caching allocator off and on; the planted
#   memcheck, racecheck and synccheck controls (no confirmation: it is initcheck's); bench/confirm.py. Every
#   confirming run carries the confirmer's own planted control (its verdicts are in each STEP.json).
set -uo pipefail
OUT=${OUT:-build/gpu-confirm}
HARD_S=${HARD_S:-420}
SKIP=${SKIP:-}   # step names to leave out, e.g. SKIP="a3_uncached a3_caching"
mkdir -p "$OUT"
exec > >(tee "$OUT/confirm.log") 2>&1
export PYTHONUNBUFFERED=1
echo "== versions"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
python3 -m cuprobe.service.cli doctor 2>&1 | tail -12
cc --version | head -1 || echo "no cc: torch probes cannot be poisoned (their findings stay unconfirmed)"

# step NAME LIMIT_S cuprobe-run-arguments...: one `cuprobe run --json`, its workdir kept (run.xml gzipped).
step() {
  local name=$1 limit=$2; shift 2
  if [[ " ${SKIP:-} " == *" $name "* ]]; then echo "== $name: skipped (SKIP)"; return; fi
  local left=$((HARD_S - SECONDS))
  if ((left < 20)); then echo "== $name: skipped, time budget spent"; return; fi
  ((limit > left)) && limit=$left
  echo "== $name (limit ${limit}s): cuprobe run $*"
  local t0=$SECONDS
  timeout -k 10 "$limit" python3 -m cuprobe.service.cli run "$@" --json --workdir "$OUT/$name" >"$OUT/$name.json" 2>"$OUT/$name.err"
  local rc=$?
  echo $((SECONDS - t0)) >"$OUT/$name.wall_s"
  python3 - "$OUT/$name.json" "$rc" "$((SECONDS - t0))" <<'PY' || tail -5 "$OUT/$name.err"
import json, sys
r = json.load(open(sys.argv[1]))
kinds = {}
for f in r["findings"]:
    kinds[f.get("confirmation") or "-"] = kinds.get(f.get("confirmation") or "-", 0) + 1
print(f"   rc={sys.argv[2]} wall={sys.argv[3]}s outcome={r['outcome']} run={r['duration_s']}s "
      f"bare={r.get('confirmation_s')}s records={r['records']} summary={r.get('summary_count')} findings={kinds}")
print(f"   message: {r['message'][:400]}")
for c in r.get("confirmation_control", []):
    print(f"   confirmer control {c['case']}: expected {c['expected']} got {c['got']} {'ok' if c['ok'] else 'WRONG'}")
for f in r["findings"][:6]:
    ev = f.get("confirmation_evidence") or {}
    print(f"   {f.get('confirmation')} {f.get('case')} {(f.get('kernel') or '')[:60]} library={f['library']}: "
          f"{ev.get('reason', '')[:300]}")
PY
  find "$OUT/$name" -name run.xml -size +1M -exec gzip -f {} \; 2>/dev/null
  find "$OUT/$name" -name '*.npz' -size +2M -delete 2>/dev/null
}

step uninit_read 60 uninit-read --tool initcheck
step narrow_unguarded 90 narrow-matmul --tool initcheck -p 'variants=["unguarded","guarded"]'
step bf16_matmul 240 bf16-matmul --tool initcheck
step a3_uncached 90 narrow-linear --tool initcheck -p allocator=no-caching
step a3_caching 90 narrow-linear --tool initcheck -p allocator=caching
step planted_memcheck 40 planted --tool memcheck
step planted_racecheck 60 planted --tool racecheck
step planted_synccheck 40 planted --tool synccheck
left=$((HARD_S - SECONDS + 130))
if ((left > 60)); then
  echo "== bench/confirm.py (narrow-matmul at its defaults, 39 cases; limit ${left}s)"
  timeout -k 10 "$left" python3 bench/confirm.py --out "$OUT/bench" 2>&1 | tee "$OUT/bench_confirm.txt"
  find "$OUT/bench" -name run.xml -size +1M -exec gzip -f {} \; 2>/dev/null
else
  echo "== bench/confirm.py: skipped, time budget spent"
fi
echo "== predictions checked (docs/confirmation.md)"
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
def load(step):
    p = out / f"{step}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None
def kinds(r, case_prefix=""):
    return {f.get("confirmation") for f in r["findings"] if f["tool"] == "initcheck" and (f.get("case") or "").startswith(case_prefix)}
def control_ok(r):
    return bool(r.get("confirmation_control")) and all(c["ok"] for c in r["confirmation_control"])
checks = []
r = load("uninit_read")
checks.append(("uninit-read -> consequential, control ok", bool(r) and kinds(r) == {"consequential"} and control_ok(r)))
r = load("narrow_unguarded")
ung = {f["case"] for f in (r or {}).get("findings", []) if (f.get("case") or "").startswith("unguarded")}
checks.append(("narrow-matmul unguarded -> benign in every case (10 cases)",
               bool(r) and kinds(r, "unguarded") == {"benign"} and len(ung) == 10 and control_ok(r)))
r = load("bf16_matmul")
wall = int((out / "bf16_matmul.wall_s").read_text()) if (out / "bf16_matmul.wall_s").exists() else 10**6
checks.append(("bf16-matmul -> blind-spot, library, control ok", bool(r) and kinds(r) == {"blind-spot"}
               and all(f["library"] for f in r["findings"] if f["tool"] == "initcheck") and control_ok(r)))
checks.append(("bf16-matmul sanitizer run under 120 s", bool(r) and r["duration_s"] < 120))
checks.append((f"bf16-matmul whole run (with bare re-runs) under 60 s: {wall} s", wall < 60))
for step in ("a3_uncached", "a3_caching"):
    r = load(step)
    checks.append((f"{step}: ran, float32 clean, bf16 findings blind-spot", bool(r) and r["outcome"] in ("clean", "findings")
                   and not kinds(r, "float32") and kinds(r, "bfloat16") <= {"blind-spot"}))
for tool in ("memcheck", "racecheck", "synccheck"):
    r = load(f"planted_{tool}")
    checks.append((f"planted {tool}: findings, control fired, no confirmation", bool(r) and r["outcome"] == "findings"
                   and all(c["passed"] for c in r["cases"]) and not any(f.get("confirmation") for f in r["findings"])))
for name, ok in checks:
    print(("PASS " if ok else "MISS ") + name)
PY
python3 docs/tools/confirm_tables.py "$OUT" | tee "$OUT/confirmation-measured.md"
echo "== done in ${SECONDS}s"
