"""Turn a sanitizer XML file into Findings: stream, extract, group, with caps on records and bytes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.previous_parser.findings import FindingGrouper
from bench.previous_parser.records import record_from_element
from bench.previous_parser.xmlstream import BrokenXML, HostileXML, StreamState, iter_records
from cuprobe.contract import Allocation, Tool
from cuprobe.service.models import Finding


@dataclass
class ParseResult:
    """Findings from one XML file, how many records it held, and whether cuprobe stopped early."""

    findings: list[Finding] = field(default_factory=list)
    records: int = 0
    truncated: bool = False
    bytes_read: int = 0
    error: str | None = None
    hostile: bool = False
    tool: Tool | None = None
    # When truncated: the case the last kept record belonged to (its count and later cases' are partial).
    truncated_at_case: str | None = None


def parse_xml(
    path: Path,
    *,
    tool: Tool | None = None,
    roots: Sequence[str] = (),
    allocations: Sequence[tuple[str, Allocation]] = (),
    single_case: str | None = None,
    sanitizer_version: str | None = None,
    filtered: bool = False,
    max_records: int = 10_000,
    max_bytes: int = 512 * 1024 * 1024,
) -> ParseResult:
    """Parse `path`; past `max_records` records or `max_bytes` bytes stop and flag `truncated`."""
    result = ParseResult(tool=tool)
    state = StreamState()
    grouper = FindingGrouper(roots, allocations, single_case, sanitizer_version, filtered)
    try:
        for elem in iter_records(path, max_bytes, state):
            if result.records >= max_records:
                result.truncated = True
                break
            rec = record_from_element(elem)
            if tool is not None and tool is not Tool.NONE:
                rec.tool = tool
            result.tool = result.tool or rec.tool
            grouper.add(rec)
            result.records += 1
    except HostileXML as exc:
        result.hostile, result.error = True, str(exc)
    except BrokenXML as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"cannot read sanitizer XML {path}: {exc}"
    result.truncated = result.truncated or state.capped
    result.bytes_read = state.bytes_read
    result.findings = grouper.findings()
    if result.truncated:
        result.truncated_at_case = grouper.last_case
    return result
