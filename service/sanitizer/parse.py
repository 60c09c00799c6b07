"""Turn a sanitizer XML file into Findings: stream, extract, group, with caps on records and bytes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cuprobe.contract import Allocation, Tool, is_control_kernel
from cuprobe.service.models import Finding
from cuprobe.service.sanitizer.chunks import Context, Unsplittable, plan
from cuprobe.service.sanitizer.findings import FindingGrouper
from cuprobe.service.sanitizer.flagged import FlaggedMemory
from cuprobe.service.sanitizer.launches import Launches
from cuprobe.service.sanitizer.pool import (
    PARALLEL_MIN_BYTES,
    ChildParser,
    WorkerFailed,
    default_workers,
    merge_in_order,
    worth_children,
)
from cuprobe.service.sanitizer.records import record_from_element
from cuprobe.service.sanitizer.xmlstream import BrokenXML, HostileXML, StreamState, check_prolog, iter_records


@dataclass
class ParseResult:
    """Findings from one XML file, how many records it held, and whether cuprobe stopped early."""

    findings: list[Finding] = field(default_factory=list)
    # Every record read; past `max_records` they are counted (and their memory flagged) but not kept.
    records: int = 0
    kept: int = 0
    truncated: bool = False
    bytes_read: int = 0
    error: str | None = None
    hostile: bool = False
    tool: Tool | None = None
    # When truncated: the case the last kept record belonged to (its count and later cases' are partial).
    truncated_at_case: str | None = None
    # initcheck: the memory each (signature, case) read, for the confirmer.
    flagged: dict[tuple[str, str | None], FlaggedMemory] = field(default_factory=dict)
    # The kernel launches of a run with --dump-kernel-launches (launch records are not counted in `records`).
    launches: Launches = field(default_factory=Launches)


def _grouper(ctx: Context) -> FindingGrouper:
    return FindingGrouper(ctx.roots, ctx.allocations, ctx.single_case, ctx.sanitizer_version, ctx.filtered)


def _in_one_stream(
    ctx: Context, max_records: int, max_bytes: int, result: ParseResult, grouper: FindingGrouper
) -> None:
    """The whole file through one iterparse: gzip, UTF-16, odd layouts, and anything the split refused."""
    state = StreamState()
    try:
        for elem in iter_records(ctx.path, max_bytes, state):
            rec = record_from_element(elem)
            if grouper.take_launch(rec):
                continue
            if ctx.tool is not None and ctx.tool is not Tool.NONE:
                rec.tool = ctx.tool
            result.tool = result.tool or rec.tool
            result.records += 1
            # The confirmer's planted records (a few hundred, last in the file) are kept past the cap.
            if result.kept >= max_records and not is_control_kernel(rec.where.func):
                result.truncated = True
                grouper.count_only(rec)
                continue
            grouper.add(rec)
            result.kept += 1
    finally:
        result.truncated = result.truncated or state.capped
        result.bytes_read = state.bytes_read


def _in_chunks(
    ctx: Context,
    max_records: int,
    max_bytes: int,
    workers: int,
    result: ParseResult,
    in_children: int = 0,
    child: Callable[[Context], ChildParser] | None = None,
) -> FindingGrouper:
    """The file cut at record boundaries, parsed on `workers` processes, merged in file order."""
    prolog = check_prolog(ctx.path)
    if (local := prolog.root.rsplit("}", 1)[-1]) not in SANITIZER_ROOTS:  # its name without a namespace
        raise BrokenXML(f"the root element is <{local}>, not compute-sanitizer's <{SANITIZER_ROOTS[0]}>")
    ctx = replace(ctx, root=prolog.root)
    chunks = plan(ctx.path, prolog, max_bytes)
    size = ctx.path.stat().st_size
    lanes = workers if size >= PARALLEL_MIN_BYTES else 1
    here = not (in_children and worth_children(ctx.path, size, in_children))
    try:
        merged = merge_in_order(ctx, chunks, max_records, lanes, here=here, child=child)
    except WorkerFailed:
        merged = merge_in_order(ctx, chunks, max_records, 1)
    result.records, result.kept, result.tool = merged.seen, merged.records, result.tool or merged.tool
    result.truncated = merged.truncated or size > max_bytes
    result.bytes_read = min(size, max_bytes)
    return merged.grouper


# compute-sanitizer's XML root (2025.x, 2026.x); a file of one bare <record> is read as that record.
SANITIZER_ROOTS = ("ComputeSanitizerOutput", "record")


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
    workers: int | None = None,
    in_children: int = 0,
    child: Callable[[Context], ChildParser] | None = None,
) -> ParseResult:
    """Parse `path`; past `max_records` records keep counting (and flagging memory) without keeping them; at
    `max_bytes` stop. Either flags `truncated`.

    A plain UTF-8 file is cut at record boundaries and parsed on `workers` processes (default: up to two);
    anything else, or a file whose pieces do not parse on their own, is read as one stream: the same Findings.
    `in_children` (for a caller whose other threads parse at the same time: how many parses, this one included, may
    run at once in this process; 0: none): a file whose records (estimated from its start) make a child pay is parsed
    in child processes only (pool.worth_children), also below the size where a second process pays; where none can
    run, here. `child` gives each child its process (one forked from a server: service/sanitizer/forked.py).
    """
    ctx = Context(path, "", tool, roots, allocations, single_case, sanitizer_version, filtered)
    result = ParseResult(tool=tool)
    grouper = _grouper(ctx)
    try:
        try:
            grouper = _in_chunks(
                ctx, max_records, max_bytes, workers or default_workers(), result, in_children, child
            )
        except Unsplittable:
            result, grouper = ParseResult(tool=tool), _grouper(ctx)
            _in_one_stream(ctx, max_records, max_bytes, result, grouper)
    except HostileXML as exc:
        result, grouper = ParseResult(tool=tool, hostile=True, error=str(exc)), _grouper(ctx)
    except BrokenXML as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"cannot read sanitizer XML {path}: {exc}"
    result.findings = grouper.findings()
    result.flagged = grouper.flagged()
    result.launches = grouper.launches
    if result.truncated:
        result.truncated_at_case = grouper.last_case
    return result
