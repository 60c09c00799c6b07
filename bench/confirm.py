"""What confirmation costs: the same initcheck run with and without the confirmer's bare re-runs, side by side.

    python bench/confirm.py [--probe narrow-matmul] [--params JSON] [--repeats 1] [--out DIR]

Runs the probe at its defaults (narrow-matmul: 13 values of n x unguarded, guarded, torch = 39 cases) under
initcheck through cuprobe's runner, once with confirmation off and once on, alternating which goes first per
repeat, and prints wall time, the sanitizer run's duration, the bare re-runs' time, and each finding's
confirmation. Needs the GPU box (a CUDA device, pycuda, compute-sanitizer).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest, RunResult, Tool
from cuprobe.service.probing.runner import run_probe


def one(probe: str, params: dict[str, Any], confirm: bool, workdir: Path) -> tuple[float, RunResult]:
    started = time.monotonic()
    request = ProbeRequest(probe=probe, tool=Tool.INITCHECK, params=params, confirm=confirm)
    result = run_probe(request, workdir=workdir, settings=Settings())
    return time.monotonic() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="narrow-matmul")
    parser.add_argument("--params", default="{}", help="probe parameters as JSON (default: the probe's defaults)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("build/bench-confirm"))
    args = parser.parse_args()
    params = json.loads(args.params)
    walls: dict[bool, list[float]] = {False: [], True: []}
    last: dict[bool, RunResult] = {}
    for repeat in range(args.repeats):
        for confirm in (False, True) if repeat % 2 == 0 else (True, False):
            wall, result = one(args.probe, params, confirm, args.out / f"r{repeat}-{'on' if confirm else 'off'}")
            (args.out / f"r{repeat}-{'on' if confirm else 'off'}.json").write_text(result.model_dump_json(indent=1))
            walls[confirm].append(wall)
            last[confirm] = result
            print(
                f"repeat {repeat + 1} confirm={'on' if confirm else 'off'}: {result.outcome.value} in {wall:.1f} s "
                f"({result.message})",
                flush=True,
            )
    off, on = last[False], last[True]
    cases = len([c for c in on.cases])
    print()
    print(f"{args.probe} under initcheck, {cases} cases, {args.repeats} repeat(s) each (median wall time)")
    print(f"{'':28} {'confirm off':>12} {'confirm on':>12} {'ratio':>8}")
    w_off, w_on = statistics.median(walls[False]), statistics.median(walls[True])
    print(f"{'wall s':28} {w_off:12.1f} {w_on:12.1f} {w_on / w_off:8.2f}")
    print(
        f"{'sanitizer run s (duration_s)':28} {off.duration_s:12.1f} {on.duration_s:12.1f} "
        f"{on.duration_s / max(off.duration_s, 1e-9):8.2f}"
    )
    print(f"{'bare re-runs s':28} {'-':>12} {on.confirmation_s or 0:12.1f}")
    print(f"{'outcome':28} {off.outcome.value:>12} {on.outcome.value:>12}")
    counts = on.confirmation_counts()
    print("confirmations (on): " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
    for check in on.confirmation_control:
        print(
            f"confirmer control {check['case']}: expected {check['expected']}, got {check['got']} "
            f"({'ok' if check['ok'] else 'WRONG'})"
        )
    return 0 if off.outcome.ran and on.outcome.ran else 3


if __name__ == "__main__":
    sys.exit(main())
