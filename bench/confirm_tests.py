"""Benchmark: what confirming a user's test costs beside its sanitized run.

Runs tests/gpu/programs/confirm_tests/test_planted_reads.py (a bf16 GEMM output read, a half-written buffer summed,
a read before a write, a masked padding read, a clean test) through `cuprobe gate --local` under initcheck, and prints
for each test its sanitized run's wall time, its confirmation's wall time (the bare re-runs after the findings), their
ratio (the target: at most 2) and each finding's verdict.
    python bench/confirm_tests.py [--sanitizer PATH] [--json FILE]      # on a GPU machine
    python bench/confirm_tests.py --smoke                                 # anywhere: a CPU file, bare
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cuprobe.service.config import Settings  # noqa: E402
from cuprobe.service.gate.runs import run_local  # noqa: E402
from cuprobe.service.gate.suite import Suite, expand  # noqa: E402
from cuprobe.service.gate.verdict import judge  # noqa: E402

PROGRAM = ROOT / "tests/gpu/programs/confirm_tests/test_planted_reads.py"
SMOKE = "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert 'a' * 2 == 'aa'\n"
TARGET = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sanitizer", help="compute-sanitizer to use (default: cuprobe's choice)")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--smoke", action="store_true", help="a CPU test file, bare: the script's own checks only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuprobe-confirm-bench-") as tmp:
        work = Path(tmp)
        (work / "tests").mkdir()
        if args.smoke:
            (work / "tests" / "test_smoke.py").write_text(SMOKE)
        else:
            shutil.copy(PROGRAM, work / "tests" / PROGRAM.name)
        tool = "none" if args.smoke else "initcheck"
        spec: dict[str, Any] = {"name": "confirm-bench", "test": [{
            "name": "reads", "kind": "pytest", "tool": tool, "paths": ["tests"], "cwd": str(work), "per": "test"}]}
        if not args.smoke:
            spec["probe"] = [{"name": "control", "probe": "uninit-read", "tool": "initcheck", "control": True}]
        suite = Suite.model_validate(spec)
        settings = Settings(sanitizer_path=args.sanitizer, timeout_s=600) if args.sanitizer else Settings(timeout_s=600)
        runs = run_local(expand(suite), work / "runs", settings)
        report = judge(suite, runs, None)
    rows = []
    for run in runs:
        if run.entry.case is None:
            continue
        result = run.results[0]
        verdicts = sorted({f.confirmation.value for f in result.findings if f.confirmation})
        confirm_s = result.confirmation_s or 0.0
        rows.append({"test": run.entry.case.split("::")[-1], "outcome": result.outcome.value,
                     "sanitized_s": round(result.duration_s, 2), "confirmation_s": round(confirm_s, 2),
                     "ratio": round(confirm_s / result.duration_s, 2) if result.duration_s else None,
                     "verdicts": verdicts})
    print("| test | outcome | sanitized s | confirmation s | confirmation / sanitized | verdicts |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['test']} | {row['outcome']} | {row['sanitized_s']} | {row['confirmation_s']} | "
              f"{row['ratio']} | {', '.join(row['verdicts']) or '-'} |")
    print(f"gate exit {report.exit_code}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    if args.smoke:
        ok = len(rows) == 2 and all(r["outcome"] == "clean" for r in rows) and report.exit_code == 0
        return 0 if ok else 1
    over = [r["test"] for r in rows if r["confirmation_s"] and (r["ratio"] or 0) > TARGET]
    if over:
        print(f"confirmation above {TARGET}x its sanitized run: {', '.join(over)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
