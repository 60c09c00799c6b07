"""Benchmark: cuprobe's parse (records -> Findings) against the previous parser and lxml alone, side by side.

Builds a sanitizer XML of --mb megabytes from every record captured on the H200 under tests/data/captures
(initcheck, memcheck, racecheck and synccheck; both sanitizer versions; many kernels), the whole set repeated,
then parses it in one child process per parser (peak RSS only grows, so each gets its own): the previous parser,
cuprobe in one process, cuprobe split over two processes, and lxml's bare iterparse (no fields, no findings).
It checks the Findings of the previous parser and of both cuprobe runs field by field (and again with a record
cap and a byte cap), and prints MB/s, CPU seconds, MB per CPU second, peak RSS summed over the parsing processes,
and whether the target (100 MB/s, peak RSS under 150 MB) is met, with the machine's load average.
    python bench/parse.py [--mb 500] [--repeat 1] [--keep]
CI runs it at --mb 2 (tests/unit/test_bench_smoke.py): its own checks, not its speed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests/data/captures"
ALLOCATIONS = CAPTURES / "2026.4.0.0/probe_narrow-matmul_initcheck/result.json"  # the batched run's case map
BOX_ROOT = "/work/main"
MODES = ("previous", "cuprobe-1-process", "cuprobe-split", "lxml-iterparse")
TITLES = {
    "previous": "previous parser",
    "cuprobe-1-process": "cuprobe, 1 process",
    "cuprobe-split": "cuprobe, split (2 processes)",
    "lxml-iterparse": "lxml iterparse alone",
}
TARGET_MB_S, TARGET_RSS_MB = 100, 150


# Record kinds captured after the previous parser was kept, which it cannot read as cuprobe does: LaunchInfo (one
# per launch under --dump-kernel-launches, saying which launches were checked; cuprobe does not count it as a record,
# the previous parser reads it as an error) and InitcheckApiError (a host API call reading uninitialized memory,
# whose access cuprobe names). They are left out of the file, so that every parser reads the same records.
NEWER_KINDS = re.compile(rb"<record>\s*<kind>(LaunchInfo|InitcheckApiError)</kind>")


def captured_records() -> list[tuple[str, list[bytes]]]:
    """(capture name, its records) for every capture that has records of the kinds both parsers read."""
    out = []
    for xml in sorted(CAPTURES.glob("*/*/run.xml*")):
        data = gzip.decompress(xml.read_bytes()) if xml.suffix == ".gz" else xml.read_bytes()
        records = [r for r in re.findall(rb"  <record>.*?</record>\n", data, re.S) if not NEWER_KINDS.search(r)]
        if records:
            out.append((f"{xml.parent.parent.name}/{xml.parent.name}", records))
    return out


def build(path: Path, megabytes: int) -> tuple[int, list[str]]:
    """Header + the captured records in turn, from the first again after the last, to `megabytes` MB + footer:
    (records, kinds). A size below the whole set's (about 110 MB) takes the records of the first captures."""
    sources = captured_records()
    records = [record for _, rs in sources for record in rs]
    kinds = sorted({k.decode() for r in records for k in re.findall(rb"<record>\s*<kind>(\w+)</kind>", r)})
    target, written, count = megabytes * 1_000_000, 0, 0
    with path.open("wb") as out:
        out.write(b'<?xml version="1.0" encoding="utf-8"?>\n<ComputeSanitizerOutput>\n')
        while written < target:
            record = records[count % len(records)]
            out.write(record)
            written += len(record)
            count += 1
        out.write(b"</ComputeSanitizerOutput>\n")
    return count, [f"{len(sources)} captures", *kinds]


def _allocations() -> list[tuple[str, object]]:
    from cuprobe.contract import ProbeResult

    probe = ProbeResult.model_validate_json(ALLOCATIONS.read_text())
    return [(case.id, alloc) for case in probe.cases for alloc in case.allocations]


def child(mode: str, path: Path, findings_out: Path, caps: dict[str, int]) -> None:
    """Parse once in this process; print seconds, CPU, records and peak RSS (this process + its children)."""
    limits = {"max_records": 10**9, "max_bytes": 1 << 40, **caps}
    result = None
    if mode == "lxml-iterparse":
        from lxml import etree

        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        records = 0
        events = etree.iterparse(str(path), events=("end",), tag="record", resolve_entities=False)
        for records, (_, elem) in enumerate(events, 1):  # noqa: B007 (the count is the result)
            elem.clear(keep_tail=False)
            while elem.getprevious() is not None:
                del elem.getparent()[0]
    elif mode == "previous":
        from bench.previous_parser.parse import parse_xml as previous

        allocations = _allocations()
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        result = previous(path, roots=[BOX_ROOT], allocations=allocations, **limits)
    else:
        from cuprobe.service.sanitizer.parse import parse_xml

        allocations = _allocations()
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        result = parse_xml(
            path,
            roots=[BOX_ROOT],
            allocations=allocations,  # type: ignore[arg-type]
            workers=1 if mode == "cuprobe-1-process" else 2,
            **limits,
        )
    seconds = time.perf_counter() - start
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    if result is not None:
        records = getattr(result, "kept", result.records)  # the previous parser stopped counting at the record cap
        findings = [f.model_dump(mode="json") for f in result.findings]
        view = {"records": records, "truncated": result.truncated, "error": result.error, "findings": findings}
        findings_out.write_text(json.dumps(view))
    print(
        json.dumps(
            {
                "seconds": seconds,
                # CPU of the parse: this process after its imports, plus its child parser's whole life
                "cpu": me.ru_utime + me.ru_stime - before.ru_utime - before.ru_stime + kids.ru_utime + kids.ru_stime,
                "records": records,
                "rss_mb": (me.ru_maxrss + kids.ru_maxrss) / 1024,  # at most one child parser: this is the sum
            }
        )
    )


def first_difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Where two parses differ — records kept, truncated, error, then every field of every Finding; None when equal."""
    for key in ("records", "truncated", "error"):
        if old[key] != new[key]:
            return f"{key}: {old[key]!r} vs {new[key]!r}"
    if len(old["findings"]) != len(new["findings"]):
        return f"{len(old['findings'])} findings vs {len(new['findings'])}"
    for i, (a, b) in enumerate(zip(old["findings"], new["findings"], strict=True)):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return f"finding {i} ({a.get('signature')}): {key} = {a.get(key)!r} vs {b.get(key)!r}"
    return None


def _commit() -> str:
    """The checkout's commit, and whether files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    except OSError:
        return "an unknown commit (no git)"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def run_child(mode: str, path: Path, out: Path, caps: dict[str, int]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path), str(out), json.dumps(caps)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="runs per parser; the table shows the median")
    parser.add_argument("--keep", action="store_true", help="keep the generated XML")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "FILE", "OUT", "CAPS"), help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]), json.loads(args.child[3]))
        return
    if args.build:
        print(json.dumps(build(Path(args.build), args.mb)))
        return
    print("$ python bench/parse.py " + " ".join(sys.argv[1:]))
    print(f"at {_commit()}, on {platform.node() or 'this machine'}")
    with tempfile.TemporaryDirectory(prefix="cuprobe-bench-") as tmp:
        path = Path(tmp) / "mixed.xml"
        # Built in its own process: Linux carries a process's peak RSS across exec into the children it starts.
        built = subprocess.run(
            [sys.executable, __file__, "--mb", str(args.mb), "--build", str(path)], capture_output=True, check=True
        )
        expected, what = json.loads(built.stdout)
        size_mb = path.stat().st_size / 1e6
        print(f"built {path} ({size_mb:.0f} MB, {expected} records: {', '.join(what)}, the set repeated)")
        print(f"cores: {os.cpu_count()}, load average (1 min) before: {os.getloadavg()[0]:.2f}")
        rows: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        views: dict[str, dict[str, Any]] = {}
        for _ in range(args.repeat):
            for mode in MODES:  # interleaved, so a change in machine load hits every parser alike
                out = Path(tmp) / f"{mode}.json"
                row = run_child(mode, path, out, {})
                assert row["records"] == expected, (mode, row["records"], expected)
                rows[mode].append(row)
                if out.exists():
                    views[mode] = json.loads(out.read_text())
        load_after = os.getloadavg()[0]
        # The caps, checked the same way (not timed): a record cap inside the file and a byte cap at its middle.
        capped: dict[str, str | None] = {}
        for name, caps in (
            (f"record cap of {expected // 3:,} records", {"max_records": expected // 3}),
            (f"byte cap of {int(size_mb * 5e5):,} bytes", {"max_bytes": int(size_mb * 5e5)}),
        ):
            got = {}
            for mode in ("previous", "cuprobe-1-process", "cuprobe-split"):
                out = Path(tmp) / f"{mode}-capped.json"
                run_child(mode, path, out, caps)
                got[mode] = json.loads(out.read_text())
            assert got["previous"]["truncated"], name
            capped[name] = first_difference(got["previous"], got["cuprobe-1-process"]) or first_difference(
                got["previous"], got["cuprobe-split"]
            )
        print(f"load average (1 min) after: {load_after:.2f}")
        med = {
            mode: {k: statistics.median(r[k] for r in runs) for k in ("seconds", "cpu", "rss_mb")}
            for mode, runs in rows.items()
        }
        diffs = {mode: first_difference(views["previous"], views[mode]) for mode in views if mode != "previous"}
        base = med["previous"]
        print(
            f"\n{'parser':<30}{'MB/s':>7}{'CPU s':>7}{'MB per CPU s':>14}{'peak RSS MB (summed)':>22}"
            f"{'speed vs previous':>19}{'findings vs previous':>22}  target ({TARGET_MB_S} MB/s, {TARGET_RSS_MB} MB)"
        )
        for mode, row in med.items():
            rate = size_mb / row["seconds"]
            same = "-" if mode not in diffs else ("identical" if diffs[mode] is None else "DIFFERENT")
            met = rate >= TARGET_MB_S and row["rss_mb"] < TARGET_RSS_MB
            target = "met" if met else f"missed ({rate:.0f} MB/s, {row['rss_mb']:.0f} MB)"
            print(
                f"{TITLES[mode]:<30}{rate:>7.1f}{row['cpu']:>7.1f}{size_mb / row['cpu']:>14.1f}{row['rss_mb']:>22.0f}"
                f"{base['seconds'] / row['seconds']:>18.2f}x{same:>22}  {target if mode.startswith('cuprobe') else '-'}"
            )
        if args.repeat > 1:
            print("\nevery run, in MB/s (the table shows the median):")
            for mode, runs in rows.items():
                print(f"  {TITLES[mode]}: " + ", ".join(f"{size_mb / r['seconds']:.1f}" for r in runs))
        print("\nfindings (every field of every Finding, records kept, truncated, error) against the previous parser:")
        for mode, diff in diffs.items():
            if mode != "lxml-iterparse":
                print(f"  {TITLES[mode]}: {'identical' if diff is None else diff}")
        for name, diff in capped.items():
            print(f"  with a {name}, both cuprobe runs: {'identical' if diff is None else diff}")
        split = med["cuprobe-split"]
        print(
            f"\ntarget for cuprobe split: {size_mb / split['seconds']:.1f} MB/s "
            f"({'met' if size_mb / split['seconds'] >= TARGET_MB_S else 'MISSED'}), peak RSS {split['rss_mb']:.0f} MB "
            f"({'met' if split['rss_mb'] < TARGET_RSS_MB else 'MISSED'}); load average {load_after:.2f} on "
            f"{os.cpu_count()} cores (a load above 0 means other work shared the cores)"
        )
        if args.keep:
            kept = ROOT / "bench" / "mixed.xml"
            path.replace(kept)
            print(f"kept {kept}")
        if any(d is not None for m, d in diffs.items() if m != "lxml-iterparse") or any(capped.values()):
            sys.exit(1)


if __name__ == "__main__":
    main()
