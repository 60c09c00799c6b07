"""Benchmark: cuprobe's parse (records -> Findings) against the previous parser and lxml alone, side by side.

Builds a sanitizer XML of --mb megabytes from every record captured on the H200 under tests/data/captures
(initcheck, memcheck, racecheck and synccheck; both sanitizer versions; many kernels), the whole set repeated,
then parses it in one child process per parser (peak RSS only grows, so each gets its own), checks that the
previous parser and the new one give the same Findings field by field, and prints MB/s, CPU, peak RSS and ratios.
    python bench/parse.py [--mb 500] [--repeat 1] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests/data/captures"
ALLOCATIONS = CAPTURES / "2026.4.0.0/probe_narrow-matmul_initcheck/result.json"  # the batched run's case map
BOX_ROOT = "/work/main"
MODES = ("previous", "cuprobe", "cuprobe-1-process", "lxml-iterparse")


def captured_records() -> list[tuple[str, bytes]]:
    """(capture name, its records' bytes) for every capture that has records."""
    out = []
    for xml in sorted(CAPTURES.glob("*/*/run.xml*")):
        data = gzip.decompress(xml.read_bytes()) if xml.suffix == ".gz" else xml.read_bytes()
        records = re.findall(rb"  <record>.*?</record>\n", data, re.S)
        if records:
            out.append((f"{xml.parent.parent.name}/{xml.parent.name}", b"".join(records)))
    return out


def build(path: Path, megabytes: int) -> tuple[int, list[str]]:
    """Header + every captured record, the whole set repeated to `megabytes` MB + footer: (records, kinds)."""
    sources = captured_records()
    block = b"".join(data for _, data in sources)
    per_block = len(re.findall(rb"<record>", block))
    kinds = sorted({k.decode() for k in re.findall(rb"<record>\s*<kind>(\w+)</kind>", block)})
    target, written, count = megabytes * 1_000_000, 0, 0
    with path.open("wb") as out:
        out.write(b'<?xml version="1.0" encoding="utf-8"?>\n<ComputeSanitizerOutput>\n')
        while written < target:
            out.write(block)
            written += len(block)
            count += per_block
        out.write(b"</ComputeSanitizerOutput>\n")
    return count, [f"{len(sources)} captures", *kinds]


def _allocations() -> list[tuple[str, object]]:
    from probes.contract import ProbeResult

    probe = ProbeResult.model_validate_json(ALLOCATIONS.read_text())
    return [(case.id, alloc) for case in probe.cases for alloc in case.allocations]


def child(mode: str, path: Path, findings_out: Path) -> None:
    """Parse once in this process; print seconds, CPU, records and peak RSS (this process + its children)."""
    if mode == "lxml-iterparse":
        from lxml import etree

        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        records = 0
        events = etree.iterparse(str(path), events=("end",), tag="record", resolve_entities=False)
        for records, (_, elem) in enumerate(events, 1):  # noqa: B007 (the count is the result)
            elem.clear(keep_tail=False)
            while elem.getprevious() is not None:
                del elem.getparent()[0]
        findings: list[dict[str, object]] | None = None
    else:
        if mode == "previous":
            from bench.previous_parser.parse import parse_xml as previous

            allocations = _allocations()
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            result = previous(path, roots=[BOX_ROOT], allocations=allocations, max_records=10**9, max_bytes=1 << 40)
        else:
            from service.sanitizer.parse import parse_xml

            allocations = _allocations()
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            result = parse_xml(
                path,
                roots=[BOX_ROOT],
                allocations=allocations,  # type: ignore[arg-type]
                max_records=10**9,
                max_bytes=1 << 40,
                workers=1 if mode == "cuprobe-1-process" else None,
            )
        records = result.records
        findings = [f.model_dump(mode="json") for f in result.findings]
        findings_out.write_text(json.dumps({"records": records, "truncated": result.truncated, "findings": findings}))
    seconds = time.perf_counter() - start
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "seconds": seconds,
                # CPU of the parse: this process after its imports, plus its child parser's whole life
                "cpu": me.ru_utime + me.ru_stime - before.ru_utime - before.ru_stime + kids.ru_utime + kids.ru_stime,
                "records": records,
                "findings": None if findings is None else len(findings),
                "rss_mb": (me.ru_maxrss + kids.ru_maxrss) / 1024,  # at most one child parser: this is the sum
            }
        )
    )


def first_difference(old: list[dict[str, object]], new: list[dict[str, object]]) -> str | None:
    """Where two Findings lists differ, field by field; None when equal."""
    if len(old) != len(new):
        return f"{len(old)} findings vs {len(new)}"
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return f"finding {i} ({a.get('signature')}): {key} = {a.get(key)!r} vs {b.get(key)!r}"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="runs per parser; the table shows the median")
    parser.add_argument("--keep", action="store_true", help="keep the generated XML")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "FILE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    if args.build:
        print(json.dumps(build(Path(args.build), args.mb)))
        return
    with tempfile.TemporaryDirectory(prefix="cuprobe-bench-") as tmp:
        path = Path(tmp) / "mixed.xml"
        # Built in its own process: Linux carries a process's peak RSS across exec into the children it starts.
        built = subprocess.run(
            [sys.executable, __file__, "--mb", str(args.mb), "--build", str(path)], capture_output=True, check=True
        )
        expected, what = json.loads(built.stdout)
        size_mb = path.stat().st_size / 1e6
        print(f"built {path} ({size_mb:.0f} MB, {expected} records: {', '.join(what)}, the set repeated)")
        print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
        rows: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        outputs: dict[str, dict[str, object]] = {}
        for _ in range(args.repeat):
            for mode in MODES:  # interleaved, so a change in machine load hits every parser alike
                out = Path(tmp) / f"{mode}.json"
                done = subprocess.run(
                    [sys.executable, __file__, "--child", mode, str(path), str(out)],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    env=dict(os.environ, PYTHONPATH=str(ROOT)),
                    check=True,
                )
                row = json.loads(done.stdout)
                assert row["records"] == expected, (mode, row["records"], expected)
                rows[mode].append(row)
                if out.exists():
                    outputs[mode] = json.loads(out.read_text())
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        diff = first_difference(outputs["previous"]["findings"], outputs["cuprobe"]["findings"])  # type: ignore[arg-type]
        diff = diff or first_difference(outputs["cuprobe"]["findings"], outputs["cuprobe-1-process"]["findings"])  # type: ignore[arg-type]
        same = diff is None and all(outputs[m]["truncated"] is False for m in outputs)
        med = {
            mode: {k: statistics.median(r[k] for r in runs) for k in ("seconds", "cpu", "rss_mb")}
            for mode, runs in rows.items()
        }
        base = med["previous"]
        print(
            f"\n{'parser':<20}{'MB/s':>8}{'CPU s':>8}{'MB per CPU s':>14}{'peak RSS MB':>13}"
            f"{'findings':>10}{'speed vs previous':>19}"
        )
        for mode, row in med.items():
            findings = rows[mode][0]["findings"]
            print(
                f"{mode:<20}{size_mb / row['seconds']:>8.1f}{row['cpu']:>8.1f}{size_mb / row['cpu']:>14.1f}"
                f"{row['rss_mb']:>13.0f}{findings if findings is not None else '-':>10}"
                f"{base['seconds'] / row['seconds']:>18.2f}x"
            )
        print(f"\nfindings, previous vs cuprobe vs cuprobe-1-process, field by field: {'identical' if same else diff}")
        cup = med["cuprobe"]
        verdict = [
            ("MB/s >= 100", size_mb / cup["seconds"] >= 100),
            ("peak RSS (summed) < 150 MB", cup["rss_mb"] < 150),
            ("same findings", same),
        ]
        print("targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in verdict))
        if args.keep:
            kept = ROOT / "bench" / "mixed.xml"
            path.replace(kept)
            print(f"kept {kept}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
