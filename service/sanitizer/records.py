"""One raw sanitizer record, pulled out of its XML element with only the fields cuprobe uses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from probes.contract import Tool
from probes.kinds import SHARED_MEMORY_HAZARD, UNINITIALIZED_GLOBAL_READ

MAX_FRAMES = 6
_SIZE_SUFFIX = re.compile(r"\s+of size \d+ bytes?.*$")
_SLUG = re.compile(r"[^a-z0-9]+")

# The record kinds each tool writes (seen in 2025.3 and 2026.4 output; docs/evidence/).
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


def _dim3(elem: Any, path: str) -> tuple[int, int, int] | None:
    node = elem.find(path)
    if node is None:
        return None
    return (_int(_text(node, "x")) or 0, _int(_text(node, "y")) or 0, _int(_text(node, "z")) or 0)


def _location(node: Any) -> Location:
    if node is None:
        return Location()
    return Location(_text(node, "func"), _text(node, "path"), _int(_text(node, "line")), _text(node, "pc"))


def _host_stack(elem: Any) -> list[tuple[str | None, str | None]]:
    frames = elem.findall("hostStack/frame")
    return [(_text(f, "func"), _text(f, "module")) for f in frames]


def record_from_element(elem: Any) -> RawRecord:
    """Build a RawRecord from a parsed <record> element (lxml or ElementTree)."""
    xml_kind = _text(elem, "kind") or "Unknown"
    text = _text(elem, "what/text") or ""
    rec = RawRecord(
        xml_kind=xml_kind,
        tool=TOOL_OF_KIND.get(xml_kind, Tool.NONE),
        kind=slug(xml_kind),
        text=text,
        level=_text(elem, "level"),
        where=_location(elem.find("where")),
        device_stack=[_location(f) for f in elem.findall("deviceStack/frame")],
        host_stack=_host_stack(elem),
        thread=_dim3(elem, "who/threadIdx"),
        block=_dim3(elem, "who/blockIdx"),
        address=_text(elem, "what/address"),
        size=_int(_text(elem, "what/size")),
    )
    _KIND_PARSERS.get(xml_kind, _parse_other)(elem, rec)
    return rec


def _parse_initcheck(elem: Any, rec: RawRecord) -> None:
    base = _SIZE_SUFFIX.sub("", rec.text)
    match = re.match(r"Uninitialized (__\w+__) memory (read|write)", base)
    if match:
        rec.space, rec.access = match.group(1), match.group(2)
    rec.kind = (
        UNINITIALIZED_GLOBAL_READ if base.startswith("Uninitialized __global__ memory read") else slug(base)
    )


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
    rec.kind = (
        SHARED_MEMORY_HAZARD if (rec.level or "Error") == "Error" else SHARED_MEMORY_HAZARD + "-warning"
    )
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
