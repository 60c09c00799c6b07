"""One raw sanitizer record, pulled out of its XML element with only the fields cuprobe uses."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from cuprobe.contract import Tool
from cuprobe.probes.kinds import SHARED_MEMORY_HAZARD, UNINITIALIZED_GLOBAL_READ

MAX_FRAMES = 6
UNUSED_MEMORY = "unused-memory"
_SIZE_SUFFIX = re.compile(r"\s+of size \d+ bytes?.*$")
_SLUG = re.compile(r"[^a-z0-9]+")

# The record kinds each tool writes (seen in 2025.3 and 2026.4 output; tests/data/captures).
TOOL_OF_KIND: dict[str, Tool] = {
    "Initcheck": Tool.INITCHECK,
    "Precise": Tool.MEMCHECK,
    "Imprecise": Tool.MEMCHECK,
    "Api": Tool.MEMCHECK,
    "Leak": Tool.MEMCHECK,
    "Synccheck": Tool.SYNCCHECK,
    "Analysis": Tool.RACECHECK,
    "Hazard": Tool.RACECHECK,
}


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")


@dataclass(frozen=True, slots=True)
class Location:
    func: str | None = None
    path: str | None = None
    line: int | None = None
    pc: str | None = None


@dataclass(slots=True)
class RawRecord:
    """The fields of one <record> that findings, signatures and attribution need."""

    xml_kind: str
    tool: Tool
    kind: str
    text: str
    level: str | None = None
    where: Location = field(default_factory=Location)
    device_stack: list[Location] = field(default_factory=list)
    host_stack: list[tuple[str | None, str | None]] = field(default_factory=list)  # (func, module)
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    address: str | None = None
    space: str | None = None
    access: str | None = None
    size: int | None = None
    detail: str | None = None  # api name + error, hazard type, leak type: part of the signature
    hazards: int | None = None
    peers: tuple[Location, ...] = ()  # racecheck: the other side(s) of the race
    severity: str = "error"  # "error" or "warning", as the sanitizer ranks the record
    source: Any = None  # the XML element, while it is alive: host stacks are read only when needed

    def host_frames(self) -> list[tuple[str | None, str | None]]:
        """The host stack (func, module) — read from the element on first use; most records never need it."""
        if not self.host_stack and self.source is not None:
            self.host_stack = _host_stack(self.source)
        return self.host_stack


def _text(elem: Any, path: str) -> str | None:
    value = elem.findtext(path)
    return value.strip() if value is not None else None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def _leaves(node: Any) -> dict[str, str]:
    """Tag -> stripped text of `node`'s direct children (one pass; far cheaper than a path lookup per field)."""
    if node is None:
        return {}
    return {child.tag: (child.text or "").strip() for child in node}


def _dim3_of(node: Any) -> tuple[int, int, int] | None:
    if node is None:
        return None
    leaves = _leaves(node)
    return (_int(leaves.get("x")) or 0, _int(leaves.get("y")) or 0, _int(leaves.get("z")) or 0)


def _dim3(elem: Any, path: str) -> tuple[int, int, int] | None:
    return _dim3_of(elem.find(path))


def _location(node: Any) -> Location:
    if node is None:
        return Location()
    leaves = _leaves(node)
    return Location(leaves.get("func"), leaves.get("path"), _int(leaves.get("line")), leaves.get("pc"))


def _host_stack(elem: Any) -> list[tuple[str | None, str | None]]:
    stack = elem.find("hostStack")
    if stack is None:
        return []
    frames = []
    for frame in stack.iterchildren("frame"):
        leaves = _leaves(frame)
        frames.append((leaves.get("func"), leaves.get("module")))
    return frames


def record_from_element(elem: Any) -> RawRecord:
    """Build a RawRecord from a parsed <record> element (lxml or ElementTree)."""
    parts = {child.tag: child for child in elem}
    what = _leaves(parts.get("what"))
    who = parts.get("who")
    xml_kind = (parts["kind"].text or "Unknown").strip() if "kind" in parts else "Unknown"
    level = parts.get("level")
    device = parts.get("deviceStack")
    rec = RawRecord(
        xml_kind=xml_kind,
        tool=TOOL_OF_KIND.get(xml_kind, Tool.NONE),
        kind=slug(xml_kind),
        text=what.get("text", ""),
        level=(level.text or "").strip() if level is not None else None,
        where=_location(parts.get("where")),
        device_stack=[_location(f) for f in device] if device is not None else [],
        thread=_dim3_of(who.find("threadIdx")) if who is not None else None,
        block=_dim3_of(who.find("blockIdx")) if who is not None else None,
        address=what.get("address"),
        size=_int(what.get("size")),
        source=elem,
    )
    _KIND_PARSERS.get(xml_kind, _parse_other)(elem, rec)
    if rec.level and rec.level.lower().startswith("warn"):
        rec.severity = "warning"  # the record's own <level> (racecheck analysis) says so
    return rec


def _same_warp(a: tuple[int, int, int] | None, b: tuple[int, int, int] | None) -> bool:
    """Whether two thread indices share a warp; exact for 1-D blocks (the XML does not give blockDim)."""
    return a is not None and b is not None and a[1:] == b[1:] and a[0] // 32 == b[0] // 32


@functools.lru_cache(maxsize=256)
def _initcheck_kind(text: str) -> tuple[str | None, str | None, str]:
    """(space, access, kind) of an initcheck message; messages repeat, so this is cached."""
    base = _SIZE_SUFFIX.sub("", text)
    match = re.match(r"Uninitialized (__\w+__) memory (read|write)", base)
    space, access = (match.group(1), match.group(2)) if match else (None, None)
    kind = UNINITIALIZED_GLOBAL_READ if base.startswith("Uninitialized __global__ memory read") else slug(base)
    return space, access, kind


def _parse_initcheck(elem: Any, rec: RawRecord) -> None:
    if rec.text.startswith("Unused memory"):
        rec.kind = UNUSED_MEMORY
        return
    rec.space, rec.access, rec.kind = _initcheck_kind(rec.text)


def _parse_precise(elem: Any, rec: RawRecord) -> None:
    rec.space = _text(elem, "what/space")
    rec.access = _text(elem, "what/direction")
    rec.detail = _text(elem, "what/error")
    space = (rec.space or "memory").strip("_")
    rec.kind = f"invalid-{space}-{rec.access or 'access'}"
    if rec.xml_kind == "Imprecise":
        rec.kind = "imprecise-" + slug(rec.detail or rec.text)


def _parse_api(elem: Any, rec: RawRecord) -> None:
    rec.kind = "api-error"
    rec.detail = f"{_text(elem, 'what/api')}:{_text(elem, 'what/error')}"


def _parse_leak(elem: Any, rec: RawRecord) -> None:
    rec.kind = "leak"
    rec.detail = _text(elem, "what/type")


def _parse_synccheck(elem: Any, rec: RawRecord) -> None:
    rec.detail = _text(elem, "what/type")
    rec.kind = slug(f"{rec.text} {rec.detail or ''}")


def _parse_analysis(elem: Any, rec: RawRecord) -> None:
    rec.kind = SHARED_MEMORY_HAZARD if (rec.level or "Error") == "Error" else SHARED_MEMORY_HAZARD + "-warning"
    rec.space = "__shared__"
    source = elem.find("what/source")
    if source is not None:
        rec.where = _location(source.find("where"))
        rec.access = _text(source, "direction")
    peers, hazards = [], 0
    for dest in elem.findall("what/destination"):
        peers.append(_location(dest.find("where")))
        hazards += _int(_text(dest, "count")) or 0
    rec.peers = tuple(peers)
    rec.hazards = hazards
    rec.detail = ",".join(sorted({_text(d, "direction") or "?" for d in elem.findall("what/destination")}))


def _parse_hazard(elem: Any, rec: RawRecord) -> None:
    rec.kind = SHARED_MEMORY_HAZARD
    rec.space = "__shared__"
    rec.detail = _text(elem, "what/common/type")
    rec.address = _text(elem, "what/common/address")
    rec.block = _dim3(elem, "what/common/blockIdx")
    rec.where = _location(elem.find("what/thread0/where"))
    rec.access = _text(elem, "what/thread0/access")
    rec.thread = _dim3(elem, "what/thread0/threadIdx")
    rec.peers = (_location(elem.find("what/thread1/where")),)
    rec.hazards = 1
    # Hazard XML has no <level>: racecheck ranks a hazard between threads of one warp a warning ("Warp Level
    # Programming"); the captured runs' summaries (3840 errors, 496 warnings) match this rule record for record.
    if _same_warp(rec.thread, _dim3(elem, "what/thread1/threadIdx")):
        rec.severity = "warning"


def _parse_sanitizer(elem: Any, rec: RawRecord) -> None:
    rec.tool = Tool.MEMCHECK
    rec.detail = _text(elem, "what/error")
    rec.kind = "sanitizer-" + slug(rec.detail or rec.text)


def _parse_other(elem: Any, rec: RawRecord) -> None:
    rec.detail = slug(rec.text)[:80] or None


_KIND_PARSERS = {
    "Initcheck": _parse_initcheck,
    "Precise": _parse_precise,
    "Imprecise": _parse_precise,
    "Api": _parse_api,
    "Leak": _parse_leak,
    "Synccheck": _parse_synccheck,
    "Analysis": _parse_analysis,
    "Hazard": _parse_hazard,
    "Sanitizer": _parse_sanitizer,
}
