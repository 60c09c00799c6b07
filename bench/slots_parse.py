"""Benchmark: K runs' XML parsed at once by one process's threads (a local sweep's K slots), here or in children.

    python bench/slots_parse.py [--slots 1,2,4] [--repeat 3] [--copies 1] [--records N]

CI runs it at `--slots 1,2 --repeat 1 --records 200` (tests/unit/test_bench_smoke.py): its own checks, not its timing.

A local sweep (`cuprobe sweep run --slots K`, bench/sweep.py) runs its K slots as threads of one process. When their
sanitizer runs end together, their K parses run at once; parsed in the threads themselves they take turns on the
process's interpreter lock, so the last one ends after about K parses' time. In a child process
(service/sanitizer/pool.py) the thread only merges what comes back: K parses take about one parse plus a child's
start-up where there are cores for them. A sweep past one slot (`parse_in_children`) sends a file to children when
its records times the parses beside it make that pay (pool.worth_children); the last column says which way that rule
goes for this file at this K, while the two timed columns force each way.

Each slot parses its own copy of the H200's batched narrow-matmul initcheck run (tests/data/runs, 6,624 records,
39.5 MB; --copies N repeats its records N times). Both modes run side by side, alternating, --repeat times each;
the table shows the median wall time of the K parses together, the slowest single parse, the ratio here/children,
and whether every slot's findings equal a lone parse's, field by field. The ratio depends on the cores: the
machine's core count and load average are printed with it.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cuprobe.service.sanitizer.parse as parse_module  # noqa: E402
from cuprobe.contract import ProbeResult  # noqa: E402
from cuprobe.service.probing.runner import allocations_of  # noqa: E402
from cuprobe.service.sanitizer.parse import ParseResult, parse_xml  # noqa: E402
from cuprobe.service.sanitizer.pool import worth_children  # noqa: E402

RUN = ROOT / "tests/data/runs/narrow-matmul-initcheck-2026.4.0.0"
BOX_ROOT = "/work/main"  # where the captured run's sources lay on the box


def build(folder: Path, slots: int, copies: int, records: int | None = None) -> list[Path]:
    data = gzip.decompress((RUN / "run.xml.gz").read_bytes())
    if records is not None:  # the first `records` records: the smoke size
        head, rest = data.split(b"<record>", 1)
        kept = rest.split(b"</record>")[:records]
        data = head + b"<record>" + b"</record>".join(kept) + b"</record>\n</ComputeSanitizerOutput>\n"
    if copies > 1:
        head, rest = data.split(b"<record>", 1)
        body, tail = (b"<record>" + rest).rsplit(b"</record>", 1)
        data = head + (body + b"</record>") * copies + tail
    paths = []
    for slot in range(slots):
        path = folder / f"slot{slot}.xml"
        path.write_bytes(data)
        paths.append(path)
    return paths


def view(result: ParseResult) -> list[dict[str, Any]]:
    return [f.model_dump() for f in result.findings] + [{"records": result.records, "error": result.error}]


def one_round(paths: list[Path], in_children: bool, kw: dict[str, Any]) -> tuple[float, float, list[ParseResult]]:
    """The K files parsed at once from K threads: here, or (`in_children`) in children whatever the rule says."""

    def parse(path: Path) -> tuple[float, ParseResult]:
        began = time.perf_counter()
        result = parse_xml(path, in_children=len(paths) if in_children else 0, **kw)
        return time.perf_counter() - began, result

    rule = parse_module.worth_children
    parse_module.worth_children = lambda *args: True  # type: ignore[assignment]  # force it: this column times it
    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(len(paths)) as pool:
            done = list(pool.map(parse, paths))
        return time.perf_counter() - began, max(t for t, _ in done), [r for _, r in done]
    finally:
        parse_module.worth_children = rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", default="1,2,4", help="K values, comma separated")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per mode and K; the table shows the median")
    parser.add_argument("--copies", type=int, default=1, help="the capture's records repeated this many times")
    parser.add_argument("--records", type=int, help="only the capture's first N records (CI's smoke size)")
    args = parser.parse_args()
    ks = [int(k) for k in args.slots.split(",")]
    allocations = allocations_of(ProbeResult.model_validate_json((RUN / "result.json").read_text()))
    kw: dict[str, Any] = {"roots": [BOX_ROOT], "allocations": allocations, "max_records": 1_000_000}
    print(f"host: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuprobe-slots-parse-") as tmp:
        paths = build(Path(tmp), max(ks), args.copies, args.records)
        size = paths[0].stat().st_size
        records = len(re.findall(rb"<record>", paths[0].read_bytes()))
        print(f"each slot's file: {size / 1e6:.1f} MB, {records:,} records")
        lone = view(parse_xml(paths[0], **kw))
        for k in ks:
            times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            same = True
            for _ in range(args.repeat):
                for in_children in (False, True):
                    wall, slowest, results = one_round(paths[:k], in_children, kw)
                    times[in_children].append((wall, slowest))
                    same = same and all(view(r) == lone for r in results)
            here, kids = (statistics.median(w for w, _ in times[m]) for m in (False, True))
            picks = "children" if worth_children(paths[0], size, k) else "here"
            rows.append((k, here, max(s for _, s in times[False]), kids, max(s for _, s in times[True]), picks, same))
    print(f"load average {os.getloadavg()[0]:.2f} at end\n")
    print(f"{'K':>3} {'here wall_s':>12} {'(slowest)':>10} {'children wall_s':>16} {'(slowest)':>10} "
          f"{'here/children':>14} {'the rule picks':>15} {'same findings':>14}")
    for k, here, here_max, kids, kids_max, picks, same in rows:
        print(f"{k:>3} {here:>12.3f} {here_max:>10.3f} {kids:>16.3f} {kids_max:>10.3f} {here / kids:>13.2f}x "
              f"{picks:>15} {'yes' if same else 'NO':>14}")
    if not all(row[-1] for row in rows):
        sys.exit("findings differ between a slot's parse and a lone parse")


if __name__ == "__main__":
    main()
