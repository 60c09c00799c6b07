"""Where a batched sweep's time goes, process by process: the 48-case narrow-matmul initcheck grid at each K, cold,
with confirmation on (the default) and off, printing the wall time and every process's stage timing
(ProcessRecord.stages: spawn, run, parse, confirm, ...). Findings must be the same with and without confirmation
(confirmation adds a verdict to a finding, it never changes its signature or count).

    python tests/gpu/sweep_stages.py [--slots 1,4] [--last 16] [--warm]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sweep import differences, per_case, timed  # noqa: E402

from cuprobe.service.config import get_settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--slots", default="1,4")
    parser.add_argument("--last", type=int, default=16, help="n = 1..LAST (16: the 48-case grid)")
    parser.add_argument("--warm", action="store_true", help="also run each K with spares ready")
    args = parser.parse_args()
    base = get_settings().model_copy(update={"warm_starts": False})
    work = Path(tempfile.mkdtemp(prefix="cuprobe-sweep-stages-"))
    first = None
    ok = True
    for k in (int(x) for x in args.slots.split(",")):
        for confirm in (True, False):
            for primed in (False, True) if args.warm else (False,):
                settings = base.model_copy(update={"confirm": confirm, "warm_starts": primed})
                name = f"k{k}-{'confirm' if confirm else 'noconfirm'}{'-primed' if primed else ''}"
                t0 = time.monotonic()
                sweep, wall = timed(name, args.last, True, work, settings, k, primed)
                cases = per_case(sweep)
                first = first if first is not None else cases
                diffs = differences(first, cases)
                ok &= not diffs
                print(f"\n== {name}: wall {wall:.1f} s ({time.monotonic() - t0:.1f} s with spares' warm-up), "
                      f"{len(sweep.processes)} processes, same findings: {'yes' if not diffs else 'NO'}", flush=True)
                for line in diffs[:5]:
                    print(f"  DIFFERS {line}")
                for i, process in enumerate(sweep.processes):
                    for stages in process.stages:
                        total = sum(stages.values())
                        parts = ", ".join(f"{s} {v:.2f}" for s, v in stages.items() if v >= 0.05)
                        print(f"  process {i}: {total:.2f} s ({parts})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
