"""Split a sanitizer XML file at record boundaries and turn one piece into partial Findings."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lxml import etree

from cuprobe.contract import Allocation, Tool
from cuprobe.service.sanitizer.findings import FindingGrouper
from cuprobe.service.sanitizer.records import RawRecord, record_from_element
from cuprobe.service.sanitizer.shapes import NotPlain, PieceReader
from cuprobe.service.sanitizer.xmlstream import HARDENED, Prolog, refuse_dtd

CHUNK_BYTES = 4 << 20
_END = b"</record>"
_WINDOW = 1 << 16
# A record that ends without "</record>" (empty element, or space before ">"): the split cannot see it.
_ODD_END = re.compile(rb"<record\b[^>]*/>|</record\s+>")
_PARSER = etree.XMLParser(**HARDENED)


class Unsplittable(ValueError):
    """The pieces did not parse as whole records: the file is read in one piece instead (same result, slower)."""


@dataclass(frozen=True)
class Chunk:
    """Bytes [start, end) of the file; the first holds the prolog, the last the root's end tag unless capped."""

    index: int
    start: int
    end: int
    first: bool
    closes: bool  # the root's end tag is in the file's bytes (else a bare one is appended)


@dataclass(frozen=True)
class Context:
    """What every chunk needs to turn records into Findings, the same in every process."""

    path: Path
    root: str
    tool: Tool | None = None
    roots: Sequence[str] = ()
    allocations: Sequence[tuple[str, Allocation]] = ()
    single_case: str | None = None
    sanitizer_version: str | None = None
    filtered: bool = False


@dataclass
class ChunkResult:
    """One chunk's records grouped; `more` when the record limit stopped it before its last record."""

    index: int
    records: int = 0
    more: bool = False
    tool: Tool | None = None
    grouper: FindingGrouper | None = None
    seen: int = 0  # every record of the chunk, kept or past the limit
    overflow: FindingGrouper | None = None  # the records past the limit, for their flagged memory only


def _next_end(raw: IO[bytes], pos: int, limit: int) -> int:
    """The offset just past the first "</record>" at or after `pos` and ending by `limit`; -1 if none."""
    while pos < limit:
        raw.seek(pos)
        window = raw.read(min(_WINDOW + len(_END), limit - pos))
        found = window.find(_END)
        if found >= 0:
            return pos + found + len(_END)
        if len(window) < len(_END):
            return -1
        pos += len(window) - len(_END) + 1
    return -1


def _last_end(raw: IO[bytes], limit: int) -> int:
    """The offset just past the last "</record>" ending by `limit`; -1 if none."""
    pos = limit
    while pos > 0:
        start = max(0, pos - _WINDOW)
        raw.seek(start)
        window = raw.read(pos - start)
        found = window.rfind(_END)
        if found >= 0:
            return start + found + len(_END)
        pos = start + len(_END) - 1 if start > 0 else 0
    return -1


def plan(path: Path, prolog: Prolog, max_bytes: int) -> list[Chunk]:
    """Cut points just after a "</record>" about every `chunk_bytes`; Unsplittable where the file cannot be cut."""
    if not (prolog.utf8 and prolog.simple_root) or prolog.root == "record" or path.suffix == ".gz":
        raise Unsplittable("not plain UTF-8 with a bare root element")
    size = path.stat().st_size
    capped = size > max_bytes
    with path.open("rb") as raw:
        stop = size
        if capped:
            stop = _last_end(raw, max_bytes)
            raw.seek(max(stop, 0))
            if stop < 0 or _ODD_END.search(raw.read(max_bytes - stop)):
                raise Unsplittable("no whole record before the byte cap, or one the split cannot see")
        cuts = [0]
        while True:
            cut = _next_end(raw, cuts[-1] + CHUNK_BYTES, stop)
            if cut < 0 or cut >= stop:
                break
            cuts.append(cut)
    cuts.append(stop)
    return [
        Chunk(index=i, start=a, end=b, first=i == 0, closes=not capped and b == size)
        for i, (a, b) in enumerate(itertools.pairwise(cuts))
    ]


def read_body(ctx: Context, chunk: Chunk) -> bytes:
    """The chunk's own bytes."""
    with ctx.path.open("rb") as raw:
        raw.seek(chunk.start)
        return raw.read(chunk.end - chunk.start)


def wrap(ctx: Context, chunk: Chunk, body: bytes) -> bytes:
    """The chunk's bytes as a whole document: wrapped in the root's start and end tags where it lacks them."""
    head = b"" if chunk.first else f"<{ctx.root}>".encode()
    tail = b"" if chunk.closes else f"</{ctx.root}>".encode()
    return head + body + tail


def _tree_records(ctx: Context, chunk: Chunk, data: bytes) -> list[RawRecord]:
    """The chunk's records from one lxml tree of it: the way for pieces shapes are not read from."""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise Unsplittable(f"chunk {chunk.index} is not well-formed on its own: {exc}") from exc
    if chunk.first:
        refuse_dtd(root.getroottree())
    records = root.findall("record")
    if int(root.xpath("count(//record)")) != len(records):
        raise Unsplittable(f"chunk {chunk.index} holds a record inside another element")
    return [record_from_element(elem) for elem in records]


def chunk_records(ctx: Context, chunk: Chunk) -> list[RawRecord]:
    """The chunk's records in file order: read by shape (shapes.py) where the piece allows, else from a tree."""
    body = read_body(ctx, chunk)
    try:
        return PieceReader(ctx.root).records(body, chunk.first, chunk.closes)
    except etree.XMLSyntaxError as exc:
        raise Unsplittable(f"chunk {chunk.index} is not well-formed on its own: {exc}") from exc
    except NotPlain:
        return _tree_records(ctx, chunk, wrap(ctx, chunk, body))


def parse_chunk(ctx: Context, chunk: Chunk, limit: int | None = None) -> ChunkResult:
    """Group the chunk's records (at most `limit`, the rest into `overflow`); Unsplittable if they are not all whole
    children of the root."""
    grouper = FindingGrouper(ctx.roots, ctx.allocations, ctx.single_case, ctx.sanitizer_version, ctx.filtered)
    result = ChunkResult(index=chunk.index, grouper=grouper)
    override = ctx.tool if ctx.tool is not None and ctx.tool is not Tool.NONE else None
    for rec in chunk_records(ctx, chunk):
        if grouper.take_launch(rec):
            continue
        if override is not None:
            rec.tool = override
        result.tool = result.tool or rec.tool
        result.seen += 1
        if limit is not None and result.records >= limit:
            result.more = True
            if result.overflow is None:
                result.overflow = FindingGrouper(ctx.roots, ctx.allocations, ctx.single_case, ctx.sanitizer_version)
            result.overflow.add(rec)
            continue
        grouper.add(rec)
        result.records += 1
    return result
