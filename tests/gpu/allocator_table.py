"""Measured tables for docs/allocator.md from the RunResult JSON files tests/gpu/allocator.sh wrote.

Usage: python3 tests/gpu/allocator_table.py DIR   (DIR holds NAME.json, one `cuprobe run --json` result each)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ALLOCATORS = ("caching", "no-caching", "caching-nvtx")
KIND = {"memcheck": "invalid-global-write", "initcheck": "uninitialized-global-read"}


def load(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def cell(result: dict[str, Any] | None, tool: str) -> str:
    """yes/no with the outcome and the count of records of the planted kind, or why there is no answer."""
    if result is None:
        return "no result"
    planted = [f for f in result.get("findings", []) if f["kind"] == KIND[tool] and not f.get("fallout")]
    found = sum(f["count"] for f in planted)
    ctx = result.get("probe_context", {})
    used = ctx.get("allocator", "?")
    note = f"; ran {used}: {ctx['allocator_fallback']}" if ctx.get("allocator_fallback") else ""
    verdict = "**yes**" if found else "no"
    return f"{verdict} ({result['outcome']}, {found} records{note})"


def planted(directory: Path) -> list[str]:
    rows = [
        "| allocator | memcheck finds the overrun | initcheck finds the stale read | wall time (memcheck, initcheck) |",
        "|---|---|---|---|",
    ]
    for alloc in ALLOCATORS:
        mem = load(directory / f"planted_{alloc}_memcheck.json")
        init = load(directory / f"planted_{alloc}_initcheck.json")
        walls = " / ".join(f"{r['duration_s']:.1f} s" if r else "-" for r in (mem, init))
        rows.append(f"| {alloc} | {cell(mem, 'memcheck')} | {cell(init, 'initcheck')} | {walls} |")
    return rows


def catalog(directory: Path) -> list[str]:
    rows = [
        "| run | allocator | outcome | findings (kind: records) | wall time | allocator context |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(directory.glob("catalog_*.json")):
        r = load(path)
        if r is None:
            rows.append(f"| {path.stem} | - | no result | - | - | - |")
            continue
        kinds: dict[str, int] = {}
        for f in r.get("findings", []):
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + f["count"]
        ctx = r.get("probe_context", {})
        shown = {k: ctx[k] for k in ("allocator", "allocator_fallback", "allocator_reserved_bytes") if k in ctx}
        counts = ctx.get("allocator_nvtx_counts")
        if counts:
            shown["regions_registered"] = counts["regions_registered"]
        found = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) or "none"
        rows.append(f"| {path.stem} | {r['params'].get('allocator')} | {r['outcome']} | {found} | "
                    f"{r['duration_s']:.1f} s | {json.dumps(shown)} |")
    return rows


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    lines = ["### Planted defects", "", *planted(folder), "", "### Catalog torch probes", "", *catalog(folder)]
    print("\n".join(lines))
