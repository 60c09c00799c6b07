"""Benchmark: cuprobe's streaming parse (records -> findings) vs a whole-tree xml.etree parse, side by side.

Builds an initcheck XML of --mb megabytes by repeating real records captured on the H200, then parses it
in two child processes (peak RSS only grows, so each gets its own) and prints MB/s and peak RSS for both.
    python bench/parse.py [--mb 500] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests/data/runs/uninit-read-initcheck-2026.4.0.0/run.xml"  # 24 real records, Python host frames


def build(path: Path, megabytes: int) -> int:
    """Write header + real records repeated to `megabytes` MB + footer; returns the record count."""
    text = SOURCE.read_text()
    records = re.findall(r"  <record>.*?</record>\n", text, re.S)
    head, tail = text[: text.index("  <record>")], "</ComputeSanitizerOutput>\n"
    block = "".join(records).encode()
    target, written, count = megabytes * 1_000_000, 0, 0
    with path.open("wb") as out:
        out.write(head.encode())
        while written < target:
            out.write(block)
            written += len(block)
            count += len(records)
        out.write(tail.encode())
    return count


def child(mode: str, path: Path) -> None:
    """Parse once in this process and print seconds, records and peak RSS as JSON."""
    start = time.perf_counter()
    if mode == "cuprobe":
        from service.sanitizer.parse import parse_xml

        result = parse_xml(path, roots=["/work/main"], max_records=10**9, max_bytes=1 << 40)
        records, findings = result.records, len(result.findings)
    else:
        import xml.etree.ElementTree as ET

        tree = ET.parse(path)
        records, findings = len(tree.getroot().findall("record")), None
    seconds = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "records": records, "findings": findings, "rss_mb": rss_mb}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the generated XML")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    with tempfile.TemporaryDirectory(prefix="cuprobe-bench-") as tmp:
        path = Path(tmp) / "initcheck.xml"
        expected = build(path, args.mb)
        size_mb = path.stat().st_size / 1e6
        print(f"built {path} ({size_mb:.0f} MB, {expected} real records repeated from {SOURCE.name})")
        rows = {}
        for mode in ("cuprobe", "etree-whole-tree"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=True,
            )
            rows[mode] = json.loads(done.stdout)
            assert rows[mode]["records"] == expected, (mode, rows[mode]["records"], expected)
        base = rows["etree-whole-tree"]["seconds"]
        print(
            f"\n{'parser':<18}{'MB/s':>8}{'peak RSS MB':>13}{'records':>10}{'findings':>10}{'speed vs whole-tree':>21}"
        )
        for mode, row in rows.items():
            print(
                f"{mode:<18}{size_mb / row['seconds']:>8.1f}{row['rss_mb']:>13.0f}{row['records']:>10}"
                f"{row['findings'] if row['findings'] is not None else '-':>10}{base / row['seconds']:>20.2f}x"
            )
        cup = rows["cuprobe"]
        verdict = [
            ("MB/s >= 60", size_mb / cup["seconds"] >= 60),
            ("speed >= 5x whole-tree", base / cup["seconds"] >= 5),
            ("peak RSS < 150 MB", cup["rss_mb"] < 150),
        ]
        print("\ntargets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in verdict))
        if args.keep:
            kept = ROOT / "bench" / "initcheck.xml"
            path.replace(kept)
            print(f"kept {kept}")


if __name__ == "__main__":
    main()
