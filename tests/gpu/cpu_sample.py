"""Sample where a host's CPU goes while something runs beside it: every interval, the cores busy in all
(/proc/stat) and the CPU seconds each command name (comm) took, from every process's /proc/PID/stat.

    python3 tests/gpu/cpu_sample.py OUT.tsv [--interval 0.5] &   ... ; kill %1
    python3 tests/gpu/cpu_sample.py --summary OUT.tsv [--from T0 --to T1]

Lines: epoch seconds, cores busy over the interval, then `comm=cores` for the five busiest
names, tab-separated. The summary
prints, for a window (epoch seconds; default the whole file), the median and peak cores busy and the CPU seconds
per name, largest first. A process that starts and ends inside one interval is missed; its time still counts in
the /proc/stat total.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
ITEM = re.compile(r"([^\t=]+)=(\d+\.\d+)")


def busy_ticks() -> int:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def per_process() -> dict[int, tuple[str, int]]:
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2 :].split()
        out[int(entry.name)] = (comm, int(rest[11]) + int(rest[12]))  # utime + stime
    return out


def sample(path: Path, interval: float) -> None:
    before, procs = busy_ticks(), per_process()
    t0 = time.monotonic()
    with path.open("a") as out:
        while True:
            time.sleep(interval)
            now, after, current = time.monotonic(), busy_ticks(), per_process()
            span = max(now - t0, 1e-6)
            by_name: Counter[str] = Counter()
            for pid, (comm, ticks) in current.items():
                by_name[comm] += ticks - procs[pid][1] if pid in procs else ticks
            top = "\t".join(f"{name}={t / TICK / span:.2f}" for name, t in by_name.most_common(5) if t > 0)
            out.write(f"{time.time():.2f}\t{(after - before) / TICK / span:.2f}\t{top}\n")
            out.flush()
            before, procs, t0 = after, current, now


def summary(path: Path, lo: float, hi: float) -> None:
    cores: list[float] = []
    seconds: Counter[str] = Counter()
    last = None
    for line in path.read_text().splitlines():
        stamp, busy, *rest = line.split("\t")
        t = float(stamp)
        if not lo <= t <= hi:
            continue
        span = t - last if last is not None else 0.5
        last = t
        cores.append(float(busy))
        # name=cores items, tab-separated (a command name may hold spaces; files before that used spaces)
        for name, value in ITEM.findall("\t".join(rest)):
            seconds[name.strip()] += float(value) * span
    if not cores:
        print("no samples in the window")
        return
    print(
        f"samples {len(cores)}: cores busy median {statistics.median(cores):.1f}, peak {max(cores):.1f} "
        f"of {os.cpu_count()}; CPU s by name: "
        + ", ".join(f"{n} {s:.1f}" for n, s in seconds.most_common(8))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--from", dest="lo", type=float, default=0.0)
    parser.add_argument("--to", dest="hi", type=float, default=float("inf"))
    args = parser.parse_args()
    if args.summary:
        summary(args.path, args.lo, args.hi)
    else:
        sample(args.path, args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
