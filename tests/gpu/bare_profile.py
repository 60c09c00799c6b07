"""Where a confirmation's bare re-run spends its time: one re-run of the first process of the 48-case narrow-matmul
sweep at K = 4 (12 cases and the confirmer's 3 planted ones, poisoned with 0xFF, every buffer watched), timed alone,
four at once (one confirmation) and sixteen at once (four confirmations, K = 4); then once under `-X importtime`
(the slowest imports) and once under cProfile (the top functions by cumulative time).

    python tests/gpu/bare_profile.py [--out DIR]
    python tests/gpu/bare_profile.py --timings-only --last 128 --slots 8 --counts 1,8,32 [--variants unguarded]
    python tests/gpu/bare_profile.py --timings-only --last 128 --whole --counts 1,4
    python tests/gpu/bare_profile.py --context-only --counts 1,8,32

--last/--slots pick the grid (n = 1..LAST x 3 variants) and the process (the first of K); --variants keeps only
those variants in it (what a re-run narrowed to the flagged cases runs); --whole re-runs the whole grid in one
process (what one confirmation of a whole sweep would run); --context-only starts processes that only create
device 0's CUDA context and exit, to see whether creating contexts side by side waits on the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sweep import GRID  # noqa: E402

from cuprobe.contract import Tool  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.probing.secrets import probe_environment  # noqa: E402
from cuprobe.service.sweep.definition import parse_definition  # noqa: E402
from cuprobe.service.sweep.execute import requests_of  # noqa: E402
from cuprobe.service.sweep.plan import plan  # noqa: E402


def command(params: dict[str, object], out: Path, mode: str = "ff") -> list[str]:
    return [
        sys.executable,
        "-m",
        "probes",
        "narrow-matmul",
        "--params",
        json.dumps(params),
        "--out",
        str(out),
        "--tool",
        "none",
        "--poison",
        mode,
        "--watch",
        "all",
        "--confirm-control",
    ]


CONTEXT_ONLY = (
    "import pycuda.driver as cuda; cuda.init(); c = cuda.Device(0).retain_primary_context(); c.push(); "
    "cuda.Context.synchronize(); c.pop()"
)


def at_once(params: dict[str, object] | None, work: Path, count: int) -> tuple[float, list[float], list[float]]:
    """`count` re-runs (params None: context-only processes) started together, in the environment cuprobe gives
    its probe processes: the wall time, and each one's wall and CPU seconds (user + system, from wait4)."""
    env = probe_environment(Tool.NONE, get_settings())
    began = time.monotonic()
    procs = []
    for i in range(count):
        out = work / f"x{count}-{i}" / "result.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-c", CONTEXT_ONLY] if params is None else command(params, out)
        procs.append(
            (
                subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env),
                time.monotonic(),
            )
        )
    each, cpu = [], []
    for proc, start in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        each.append(time.monotonic() - start)
        cpu.append(usage.ru_utime + usage.ru_stime)
        if proc.returncode:
            print(f"  exit {proc.returncode}")
    return time.monotonic() - began, each, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="bare-profile-")))
    parser.add_argument("--timings-only", action="store_true", help="skip the importtime and cProfile runs")
    parser.add_argument("--last", type=int, default=16, help="the grid's last n (16: 48 cases, 128: 384)")
    parser.add_argument("--slots", type=int, default=4, help="K: the re-run is of the first of K processes")
    parser.add_argument("--whole", action="store_true", help="re-run the whole grid in one process")
    parser.add_argument("--variants", default="", help="comma-separated: keep only these variants")
    parser.add_argument("--counts", default="1,1,4,16", help="how many re-runs at once, in turn")
    parser.add_argument("--context-only", action="store_true", help="processes that only create a CUDA context")
    args = parser.parse_args()
    definition = parse_definition(GRID.format(name="bare-profile", batch="true", last=args.last))
    params: dict[str, object] | None = None
    if not args.context_only:
        params = dict(requests_of(plan(definition, 1 if args.whole else args.slots))[0][1].params)
        if args.variants:
            params["variants"] = [v for v in params["variants"] if v in args.variants.split(",")]  # type: ignore[attr-defined]
    print(f"params: {'(context only)' if params is None else json.dumps(params)}")
    work = args.out
    work.mkdir(parents=True, exist_ok=True)
    for count in (int(c) for c in args.counts.split(",")):
        wall, each, cpu = at_once(params, work, count)
        print(
            f"{count:>2} at once: wall {wall:.2f} s; each {min(each):.2f}-{max(each):.2f} s (median "
            f"{statistics.median(each):.2f}); CPU s each median {statistics.median(cpu):.2f}, all {sum(cpu):.1f}",
            flush=True,
        )
    if args.timings_only or params is None:
        return 0
    py = sys.executable
    probe_cmd = command(params, work / "imp" / "result.json")
    (work / "imp").mkdir(exist_ok=True)
    done = subprocess.run([py, "-X", "importtime", *probe_cmd[1:]], cwd=ROOT, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), len(m.group(3)), m.group(4)))
    top = sorted((r for r in rows if r[1] <= 3), reverse=True)[:12]
    print("slowest imports (cumulative, top levels):")
    for us, _, name in top:
        print(f"  {us / 1e6:6.2f} s  {name}")
    prof = work / "bare.prof"
    (work / "prof").mkdir(exist_ok=True)
    t0 = time.monotonic()
    profiled = command(params, work / "prof" / "result.json")[1:]
    subprocess.run([py, "-m", "cProfile", "-o", str(prof), *profiled], cwd=ROOT, capture_output=True)
    print(f"under cProfile: {time.monotonic() - t0:.2f} s")
    import pstats

    stats = pstats.Stats(str(prof))
    stats.sort_stats("cumulative").print_stats(28)
    return 0


if __name__ == "__main__":
    sys.exit(main())
