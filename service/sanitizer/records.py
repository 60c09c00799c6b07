"""One raw sanitizer record, pulled out of its XML element with only the fields cuprobe uses."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from cuprobe.contract import Tool
from cuprobe.probes.kinds import HOST_API_UNINITIALIZED, SHARED_MEMORY_HAZARD, UNINITIALIZED_GLOBAL_READ, slug
from cuprobe.service.sanitizer.xmlstream import HARDENED

UNUSED_MEMORY = "unused-memory"
_SIZE_SUFFIX = re.compile(r"\s+of size \d+ bytes?.*$")
_STACK_PARSER = etree.XMLParser(**HARDENED)

# The record kinds each tool writes (seen in 2025.3 and 2026.4 output; tests/data/captures).
TOOL_OF_KIND: dict[str, Tool] = {
    "Initcheck": Tool.INITCHECK,
    "InitcheckApiError": Tool.INITCHECK,
    "Precise": Tool.MEMCHECK,
    "Imprecise": Tool.MEMCHECK,
    "Api": Tool.MEMCHECK,
    "Leak": Tool.MEMCHECK,
    "Synccheck": Tool.SYNCCHECK,
    "Analysis": Tool.RACECHECK,
    "Hazard": Tool.RACECHECK,
}


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
    host_source: Any = None  # or the bytes of its <hostStack> element, cut out of the record (shapes.py)
    # A `--dump-kernel-launches` record (LaunchInfo): whether the filters left that launch unchecked; None for
    # every other record. Never a finding: counted in service/sanitizer/launches.py.
    launch_filtered: bool | None = None

    def host_frames(self) -> list[tuple[str | None, str | None]]:
        """The host stack (func, module) — read from the element on first use; most records never need it."""
        if not self.host_stack:
            if self.host_source is not None:
                self.host_stack = host_stack_of(self.host_source)
            elif self.source is not None:
                self.host_stack = host_stack_of(self.source.find("hostStack"))
        return self.host_stack

    def device_frames(self) -> list[Location]:
        """The device stack — read from the element on first use: only a finding's first record needs it."""
        if not self.device_stack and self.source is not None:
            self.device_stack = device_stack_of(self.source)
        return self.device_stack


@dataclass(slots=True)
class Varying:
    """The leaves a record's per-record values come from — its thread and block indices, its address, and for a
    racecheck hazard the other thread's index — as XML elements, or as slot numbers of a record shape (shapes.py)."""

    thread: tuple[Any, Any, Any] | None = None
    block: tuple[Any, Any, Any] | None = None
    address: Any = None
    other_thread: tuple[Any, Any, Any] | None = None
    same_warp_rule: bool = False  # a hazard between threads of one warp is a warning


def _text(elem: Any, path: str) -> str | None:
    value = elem.findtext(path)
    return value.strip() if value is not None else None


def _int(value: str | bytes | None) -> int | None:
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


def _dim3_leaves(node: Any) -> tuple[Any, Any, Any] | None:
    """The x, y, z children of a dim3 element (the last of each, as a dict of children keeps it)."""
    if node is None:
        return None
    children = {child.tag: child for child in node}
    return (children.get("x"), children.get("y"), children.get("z"))


def _location(node: Any) -> Location:
    if node is None:
        return Location()
    leaves = _leaves(node)
    return Location(leaves.get("func"), leaves.get("path"), _int(leaves.get("line")), leaves.get("pc"))


def host_stack_of(stack: Any) -> list[tuple[str | None, str | None]]:
    """(func, module) of each frame of a <hostStack> element, or of its bytes (records launched from one place carry
    the same bytes: parsed once; the list is shared, never changed)."""
    if isinstance(stack, bytes):
        frames = _HOST_STACKS.get(stack)
        if frames is None:
            if len(_HOST_STACKS) >= _MAX_HOST_STACKS:
                _HOST_STACKS.clear()
            frames = _HOST_STACKS[stack] = host_stack_of(etree.fromstring(stack, _STACK_PARSER))
        return frames
    if stack is None:
        return []
    frames = []
    for frame in stack.iterchildren("frame"):
        leaves = _leaves(frame)
        frames.append((leaves.get("func"), leaves.get("module")))
    return frames


_HOST_STACKS: dict[bytes, list[tuple[str | None, str | None]]] = {}
_MAX_HOST_STACKS = 256


def device_stack_of(elem: Any) -> list[Location]:
    """The frames of a record's (last) <deviceStack>."""
    stacks = [child for child in elem if child.tag == "deviceStack"]
    return [_location(f) for f in stacks[-1]] if stacks else []


def read_record(elem: Any) -> tuple[RawRecord, Varying]:
    """A record's fields that do not vary from record to record, and where the ones that do are."""
    parts = {child.tag: child for child in elem}
    what = parts.get("what")
    what_leaves = {child.tag: child for child in what} if what is not None else {}
    who = {child.tag: child for child in reversed(parts["who"])} if "who" in parts else None  # first wins, as find()
    xml_kind = (parts["kind"].text or "Unknown").strip() if "kind" in parts else "Unknown"
    level = parts.get("level")
    size = what_leaves.get("size")
    text = what_leaves.get("text")
    rec = RawRecord(
        xml_kind=xml_kind,
        tool=TOOL_OF_KIND.get(xml_kind, Tool.NONE),
        kind=slug(xml_kind),
        text=(text.text or "").strip() if text is not None else "",
        level=(level.text or "").strip() if level is not None else None,
        where=_location(parts.get("where")),
        size=_int((size.text or "").strip()) if size is not None else None,
        source=elem,
    )
    var = Varying(
        thread=_dim3_leaves(who.get("threadIdx")) if who is not None else None,
        block=_dim3_leaves(who.get("blockIdx")) if who is not None else None,
        address=what_leaves.get("address"),
    )
    _KIND_PARSERS.get(xml_kind, _parse_other)(elem, rec, var)
    if rec.level and rec.level.lower().startswith(("warn", "info")):
        rec.severity = "warning"  # the record's own <level> (racecheck analysis) says so; info is below warning
    return rec, var


def _dim3_value(leaves: tuple[Any, Any, Any] | None, text: Callable[[Any], str | bytes]) -> tuple[int, int, int] | None:
    if leaves is None:
        return None
    x, y, z = leaves
    return (
        0 if x is None else (_int(text(x)) or 0),
        0 if y is None else (_int(text(y)) or 0),
        0 if z is None else (_int(text(z)) or 0),
    )


def _element_text(elem: Any) -> str:
    return elem.text or ""


def fill(rec: RawRecord, var: Varying, text: Callable[[Any], str | bytes] = _element_text) -> RawRecord:
    """Set the per-record fields from the leaves `var` names; `text` reads one leaf (int() ignores the spaces
    around a number; an address is stripped here)."""
    rec.thread = _dim3_value(var.thread, text)
    rec.block = _dim3_value(var.block, text)
    if var.address is not None:
        address = text(var.address).strip()
        rec.address = address.decode() if isinstance(address, bytes) else address
        if rec.address.isdigit():  # InitcheckApiError writes its addresses in decimal; cuprobe's are hex
            rec.address = hex(int(rec.address))
    if var.same_warp_rule and _same_warp(rec.thread, _dim3_value(var.other_thread, text)):
        rec.severity = "warning"
    return rec


def record_from_element(elem: Any) -> RawRecord:
    """Build a RawRecord from a parsed <record> element (lxml or ElementTree)."""
    return fill(*read_record(elem))


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


def _parse_initcheck(elem: Any, rec: RawRecord, var: Varying) -> None:
    if rec.text.startswith("Unused memory"):
        rec.kind = UNUSED_MEMORY
        return
    rec.space, rec.access, rec.kind = _initcheck_kind(rec.text)


def _parse_initcheck_api(elem: Any, rec: RawRecord, var: Varying) -> None:
    """A host API call (cudaMemcpy, cuMemcpyDtoH) read device memory initcheck holds uninitialized: one record per
    32-byte piece, `<errorAddress>` the piece (in decimal), `<accessAddress>`/`<accessSize>` the whole call, which
    is the same for each of its records (tests/data/captures/*/launches_filter_nomatch_hostapi)."""
    rec.kind = HOST_API_UNINITIALIZED
    rec.space = "__global__"
    rec.access = "read"
    var.address = elem.find("what/errorAddress")


def _parse_precise(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.space = _text(elem, "what/space")
    rec.access = _text(elem, "what/direction")
    rec.detail = _text(elem, "what/error")
    space = (rec.space or "memory").strip("_")
    rec.kind = f"invalid-{space}-{rec.access or 'access'}"
    if rec.xml_kind == "Imprecise":
        rec.kind = "imprecise-" + slug(rec.detail or rec.text)


def _parse_api(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.kind = "api-error"
    rec.detail = f"{_text(elem, 'what/api')}:{_text(elem, 'what/error')}"


def _parse_leak(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.kind = "leak"
    rec.detail = _text(elem, "what/type")


def _parse_synccheck(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.detail = _text(elem, "what/type")
    rec.kind = slug(f"{rec.text} {rec.detail or ''}")


def _parse_analysis(elem: Any, rec: RawRecord, var: Varying) -> None:
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


def _parse_hazard(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.kind = SHARED_MEMORY_HAZARD
    rec.space = "__shared__"
    rec.detail = _text(elem, "what/common/type")
    var.address = elem.find("what/common/address")
    var.block = _dim3_leaves(elem.find("what/common/blockIdx"))
    rec.where = _location(elem.find("what/thread0/where"))
    rec.access = _text(elem, "what/thread0/access")
    var.thread = _dim3_leaves(elem.find("what/thread0/threadIdx"))
    rec.peers = (_location(elem.find("what/thread1/where")),)
    rec.hazards = 1
    # Hazard XML has no <level>: racecheck ranks a hazard between threads of one warp a warning ("Warp Level
    # Programming"); the captured runs' summaries (3840 errors, 496 warnings) match this rule record for record.
    var.other_thread = _dim3_leaves(elem.find("what/thread1/threadIdx"))
    var.same_warp_rule = True


def _parse_sanitizer(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.tool = Tool.MEMCHECK
    rec.detail = _text(elem, "what/error")
    rec.kind = "sanitizer-" + slug(rec.detail or rec.text)


def _parse_launch(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.detail = _text(elem, "what/kernel")
    rec.launch_filtered = (_text(elem, "what/filtered") or "").strip().lower() == "true"


def _parse_other(elem: Any, rec: RawRecord, var: Varying) -> None:
    rec.detail = slug(rec.text)[:80] or None


_KIND_PARSERS = {
    "Initcheck": _parse_initcheck,
    "InitcheckApiError": _parse_initcheck_api,
    "Precise": _parse_precise,
    "Imprecise": _parse_precise,
    "Api": _parse_api,
    "Leak": _parse_leak,
    "Synccheck": _parse_synccheck,
    "Analysis": _parse_analysis,
    "Hazard": _parse_hazard,
    "Sanitizer": _parse_sanitizer,
    "LaunchInfo": _parse_launch,
}
