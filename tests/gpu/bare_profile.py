"""Where a confirmation's bare re-run spends its time: one re-run of the first process of the 48-case narrow-matmul
sweep at K = 4 (12 cases and the confirmer's 3 planted ones, poisoned with 0xFF, every buffer watched), timed alone,
four at once (one confirmation) and sixteen at once (four confirmations, K = 4); then once under `-X importtime`
(the slowest imports) and once under cProfile (the top functions by cumulative time).

    python tests/gpu/bare_profile.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sweep import GRID  # noqa: E402

from probes.contract import Tool  # noqa: E402
from service.config import get_settings  # noqa: E402
from service.probing.secrets import probe_environment  # noqa: E402
from service.sweep.definition import parse_definition  # noqa: E402
from service.sweep.execute import requests_of  # noqa: E402
from service.sweep.plan import plan  # noqa: E402


def command(params: dict[str, object], out: Path, mode: str = "ff") -> list[str]:
    return [
        sys.executable, "-m", "probes", "narrow-matmul", "--params", json.dumps(params), "--out", str(out),
        "--tool", "none", "--poison", mode, "--watch", "all", "--confirm-control",
    ]


def at_once(params: dict[str, object], work: Path, count: int) -> tuple[float, list[float]]:
    """`count` re-runs started together, in the environment cuprobe gives its probe processes."""
    env = probe_environment(Tool.NONE, get_settings())
    began = time.monotonic()
    procs = []
    for i in range(count):
        out = work / f"x{count}-{i}" / "result.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        procs.append((subprocess.Popen(command(params, out), cwd=ROOT, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, env=env), time.monotonic()))
    each = []
    for proc, start in procs:
        _, err = proc.communicate()
        each.append(time.monotonic() - start)
        if proc.returncode:
            print(f"  exit {proc.returncode}: {err.decode()[-400:]}")
    return time.monotonic() - began, each


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="bare-profile-")))
    parser.add_argument("--timings-only", action="store_true", help="skip the importtime and cProfile runs")
    args = parser.parse_args()
    definition = parse_definition(GRID.format(name="bare-profile", batch="true", last=16))
    params = requests_of(plan(definition, 4))[0][1].params
    print(f"params: {json.dumps(params)}")
    work = args.out
    work.mkdir(parents=True, exist_ok=True)
    for count in (1, 1, 4, 16):
        wall, each = at_once(params, work, count)
        print(f"{count:>2} at once: wall {wall:.2f} s; each {min(each):.2f}-{max(each):.2f} s", flush=True)
    if args.timings_only:
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
