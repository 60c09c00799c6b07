"""Warm starts on a GPU: the same narrow-matmul initcheck request run cold and in spares, one after another.

Prints per run whether a spare took it, its wall time, the spare's warm-up and wait (from the probe's context),
and its outcome and findings; exits 1 unless every warm run's outcome and findings (signature, count) equal the
cold run's. From the project root on a GPU machine:
    python3 tests/gpu/warm_check.py [--runs 4] [--variants unguarded,guarded,torch]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cuprobe.contract import Tool  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.models import ProbeRequest, RunResult  # noqa: E402
from cuprobe.service.probing.runner import run_probe  # noqa: E402
from cuprobe.service.probing.spares import Spares  # noqa: E402


def seen(result: RunResult) -> tuple[str, list[tuple[str, int]]]:
    return result.outcome.value, sorted((f.signature, f.count) for f in result.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=4, help="runs after the cold one")
    parser.add_argument("--variants", default="unguarded,guarded,torch")
    args = parser.parse_args()
    settings = get_settings().model_copy(update={"confirm": False})
    request = ProbeRequest(
        probe="narrow-matmul",
        tool=Tool.INITCHECK,
        params={"m": 32, "k": 32, "tile": 32, "n": [1, 2, 3, 4], "variants": args.variants.split(",")},
        show_backtrace="device",
        timeout_s=300,
    )
    work = Path(tempfile.mkdtemp(prefix="cuprobe-warm-check-"))
    spares = Spares(work / "spares", size=1)
    rows, ok = [], True
    try:
        cold_settings = settings.model_copy(update={"warm_starts": False})
        reference = run_probe(request, workdir=work / "cold", settings=cold_settings)
        rows.append(("cold (no pool)", reference))
        for i in range(args.runs):
            began = time.monotonic()
            ready = spares.wait_ready(1, 120) if i else 0
            waited = time.monotonic() - began
            result = run_probe(request, workdir=work / f"run{i}", settings=settings, spares=spares)
            label = f"run {i}" + (f" (waited {waited:.1f} s for {ready} spare ready)" if i else " (pool empty)")
            rows.append((label, result))
            if seen(result) != seen(reference):
                ok = False
                print(f"DIFFERS {label}: {seen(result)} vs {seen(reference)}")
    finally:
        spares.close()
    print(f"{'run':<44}{'warm':>6}{'wall_s':>9}{'spawn':>7}{'ready_after_s':>15}{'waited_s':>10}  outcome, findings")
    for label, r in rows:
        w = r.probe_context.get("warm_start") or {}
        print(
            f"{label:<44}{'yes' if r.warm_start else 'no':>6}{r.duration_s:>9.2f}{r.timing.get('spawn', 0):>7.3f}"
            f"{w.get('ready_after_s', '-')!s:>15}{w.get('waited_s', '-')!s:>10}  {seen(r)[0]}, "
            f"{sum(c for _, c in seen(r)[1])} records in {len(seen(r)[1])} finding(s)"
        )
        if w.get("warm_up_error"):
            print(f"    warm-up error: {w['warm_up_error']}")
    print("same outcome and findings in every run" if ok else "FINDINGS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
