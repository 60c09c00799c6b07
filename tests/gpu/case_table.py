"""Per-case table of a batched probe run: sanitizer records attributed to cases by allocation address.

Usage: python3 tests/gpu/case_table.py DIR   (DIR holds result.json and run.xml or run.xml.gz)
Prints: case, expected records (the probe's own count, where it gives one), measured records, max relative
error, violations; then records that fell in no case's allocations and the sanitizer's own summary count.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import IO, Any, cast


def open_xml(directory: Path) -> IO[bytes] | None:
    """run.xml or run.xml.gz in `directory`, opened for streaming."""
    if (directory / "run.xml").exists():
        return open(directory / "run.xml", "rb")
    if (directory / "run.xml.gz").exists():
        return cast(IO[bytes], gzip.open(directory / "run.xml.gz", "rb"))
    return None


def record_addresses(stream: IO[bytes]) -> tuple[list[int], Counter[str]]:
    """Addresses of every record (streamed, one record in memory at a time) and a count per record text."""
    addresses: list[int] = []
    texts: Counter[str] = Counter()
    for _, elem in ET.iterparse(stream, events=("end",)):
        if elem.tag != "record":
            continue
        address = elem.findtext("what/address")
        texts[elem.findtext("what/text") or elem.findtext("kind") or "?"] += 1
        if address:
            addresses.append(int(address, 16))
        elem.clear()
    return addresses, texts


def attribute(addresses: list[int], cases: list[dict[str, Any]]) -> tuple[Counter[str], int]:
    """Records per case id by the allocation that holds their address, and how many fell in none."""
    ranges = [(a["start"], a["start"] + a["size"], c["id"]) for c in cases for a in c["allocations"]]
    per_case: Counter[str] = Counter()
    unattributed = 0
    for address in addresses:
        owner = next((cid for lo, hi, cid in ranges if lo <= address < hi), None)
        if owner is None:
            unattributed += 1
        else:
            per_case[owner] += 1
    return per_case, unattributed


def summary_count(directory: Path) -> str:
    """The sanitizer's ERROR SUMMARY count from its stdout, or '?'."""
    for name in ("stdout.txt", "stderr.txt"):
        path = directory / name
        if path.exists():
            found = re.findall(r"ERROR SUMMARY: (\d+) error", path.read_text(errors="replace"))
            if found:
                return str(found[-1])
    return "?"


def main(directory: Path) -> int:
    result = json.loads((directory / "result.json").read_text())
    stream = open_xml(directory)
    addresses, texts = record_addresses(stream) if stream else ([], Counter())
    per_case, unattributed = attribute(addresses, result["cases"])
    print(f"{'case':<18} {'expected':>9} {'measured':>9} {'match':>6} {'max_rel_err':>12}  violations")
    mismatches = 0
    for case in result["cases"]:
        obs = case["observations"]
        expected = obs.get("expected_uninit_reads")
        measured = per_case.get(case["id"], 0)
        match = "-" if expected is None else ("yes" if expected == measured else "NO")
        mismatches += match == "NO"
        err = obs.get("max_rel_err")
        err_text = f"{err:.3g}" if isinstance(err, float) else "-"
        print(f"{case['id']:<18} {expected if expected is not None else '-':>9} {measured:>9} {match:>6} "
              f"{err_text:>12}  {'; '.join(case['violations']) or '-'}")
    print(f"records: {len(addresses)} in run.xml, {unattributed} in no case's allocations, "
          f"sanitizer summary: {summary_count(directory)}; by text: {dict(texts)}")
    print(f"complete: {result.get('complete')}; cases whose count differs from the expected: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
