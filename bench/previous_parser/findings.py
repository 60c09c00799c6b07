"""Group raw records into Findings by signature (and case), with counts, ranges and examples."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from bench.previous_parser.records import UNUSED_MEMORY, Location, RawRecord
from cuprobe.contract import Allocation, Tool
from cuprobe.service.models import Finding

MAX_ADDRESSES = 3
MAX_FRAMES = 6
_VENDOR_LIBRARY = re.compile(r"lib(cublas|cublasLt|cudnn|cufft|curand|cusparse|cusolver|nccl|nvrtc|nvjitlink)", re.I)
_DRIVER_LIBRARY = re.compile(r"lib(cuda|cudart)[.\w]*\.so", re.I)
_AXES = ("x", "y", "z")
# Host frames inside the CUDA runtime and driver API: the user's call site is the first frame after them.
_RUNTIME_FRAME = re.compile(r"^(libcudart_static|__cuda|cu[A-Z]|cuda[A-Z]|cudaError )")


@functools.lru_cache(maxsize=4096)
def _relative(path: str, roots: tuple[str, ...]) -> str:
    posix = PurePosixPath(path)
    if not posix.is_absolute():
        return str(posix)
    for root in roots:
        try:
            return str(posix.relative_to(PurePosixPath(root)))
        except ValueError:
            continue
    return posix.name


def relative_path(path: str | None, roots: Sequence[str]) -> str | None:
    """`path` relative to the first source root holding it, else its file name: never absolute in a signature."""
    if not path:
        return None
    return _relative(path, tuple(roots))


@functools.lru_cache(maxsize=4096)
def is_cuda_header(path: str | None) -> bool:
    """True for CUDA's own headers (synccheck reports land in sm_30_intrinsics.hpp), not user code."""
    if not path:
        return False
    lowered = path.lower()
    return ("/include/" in lowered and "cuda" in lowered) or PurePosixPath(lowered).name.startswith("sm_")


def user_location(rec: RawRecord) -> Location:
    """The innermost frame in user code: `where`, unless it is a CUDA header and a device frame is not."""
    if not is_cuda_header(rec.where.path):
        return rec.where
    for frame in rec.device_stack:
        if frame.path and not is_cuda_header(frame.path):
            return frame
    return rec.where


def is_library(rec: RawRecord, loc: Location) -> bool:
    """A report with no user source line whose launch came from a vendor library (cuBLAS, cuDNN...)."""
    if loc.path and not is_cuda_header(loc.path):
        return False
    return any(module and _VENDOR_LIBRARY.search(module) for _, module in rec.host_frames())


def _place(loc: Location, roots: Sequence[str]) -> str:
    path = relative_path(loc.path, roots)
    if path and loc.line is not None:
        return f"{path}:{loc.line}"
    return f"pc{loc.pc or '?'}"


SIGNATURE_MAX = 400


def bounded(signature: str) -> str:
    """A signature of at most SIGNATURE_MAX characters: a long one (C++ template kernel names) keeps its
    head and ends in a hash of the whole, so it stays distinct, stable and storable."""
    if len(signature) <= SIGNATURE_MAX:
        return signature
    digest = hashlib.sha256(signature.encode()).hexdigest()[:16]
    return f"{signature[: SIGNATURE_MAX - 18]}#{digest}"


def first_user_frame(rec: RawRecord) -> str:
    """The first host frame outside the CUDA driver and runtime: the user's call site ('?' when none)."""
    user = [
        f for f, m in rec.host_frames() if f and m and not _DRIVER_LIBRARY.search(m) and not _RUNTIME_FRAME.match(f)
    ]
    return user[0] if user else "?"


def signature_of(rec: RawRecord, roots: Sequence[str]) -> str:
    """tool:kind:kernel:file:line:access — stable across runs and machines (no addresses or thread ids).

    Leaks and unused memory have no kernel or line: tool|kind|size=N|type|@first user host frame."""
    if rec.kind in ("leak", UNUSED_MEMORY):
        parts = [rec.tool.value, rec.kind, f"size={rec.size if rec.size is not None else '?'}"]
        return bounded("|".join([*parts, *([rec.detail] if rec.detail else []), "@" + first_user_frame(rec)]))
    loc = user_location(rec)
    kernel = rec.where.func if rec.where.func and not is_cuda_header(rec.where.path) else loc.func
    access = "-".join(str(p).strip("_") for p in (rec.space, rec.access, rec.size) if p is not None)
    parts = [rec.tool.value, rec.kind, kernel or "-", _place(loc, roots) if (loc.path or loc.pc) else "-"]
    if rec.peers:
        parts.append("vs " + ",".join(sorted(_place(p, roots) for p in rec.peers)))
    if access:
        parts.append(access)
    if rec.detail:
        parts.append(rec.detail)
    if rec.kind == "api-error":
        parts.append("@" + first_user_frame(rec))
    if rec.severity == "warning" and "warning" not in rec.kind:
        parts.append("warning")  # a warning and an error at the same place are two findings
    return bounded("|".join(parts))


def case_of(address: str | None, allocations: Sequence[tuple[str, Allocation]]) -> str | None:
    """The case whose buffer holds `address`, by the allocation map the probe recorded."""
    if not address:
        return None
    try:
        value = int(address, 16)
    except ValueError:
        return None
    for case_id, alloc in allocations:
        if alloc.start <= value < alloc.start + alloc.size:
            return case_id
    return None


@dataclass
class _Group:
    """A finding being built; counts live here (not on the pydantic model) because they change per record."""

    finding: Finding
    count: int = 0
    hazards: int | None = None
    threads: dict[str, list[int]] = field(default_factory=dict)
    blocks: dict[str, list[int]] = field(default_factory=dict)
    addresses: list[str] = field(default_factory=list)


def _widen(ranges: dict[str, list[int]], dim: tuple[int, int, int] | None) -> None:
    if dim is None:
        return
    for axis, value in zip(_AXES, dim, strict=True):
        low_high = ranges.setdefault(axis, [value, value])
        low_high[0], low_high[1] = min(low_high[0], value), max(low_high[1], value)


def _frame(func: str | None, module: str | None) -> str:
    return f"{func or '?'} ({PurePosixPath(module).name if module else '?'})"


class FindingGrouper:
    """Accumulates records into Findings keyed by (signature, case); memory grows with findings, not records."""

    def __init__(
        self,
        roots: Sequence[str],
        allocations: Sequence[tuple[str, Allocation]] = (),
        single_case: str | None = None,
        sanitizer_version: str | None = None,
        filtered: bool = False,
    ) -> None:
        self.roots = list(roots)
        self.allocations = list(allocations)
        self.single_case = single_case
        self.sanitizer_version = sanitizer_version
        self.filtered = filtered
        self.groups: dict[tuple[str, str | None], _Group] = {}
        self._context_dead = False
        # The case of the latest record: when parsing stops at the record cap, counts from here on are partial.
        self.last_case: str | None = None

    def add(self, rec: RawRecord) -> None:
        signature = signature_of(rec, self.roots)
        case = case_of(rec.address, self.allocations) or self.single_case
        self.last_case = case or self.last_case
        group = self.groups.get((signature, case))
        if group is None:
            group = self._new_group(rec, signature, case)
            self.groups[(signature, case)] = group
        group.count += 1
        if rec.hazards is not None:
            group.hazards = (group.hazards or 0) + rec.hazards
        _widen(group.threads, rec.thread)
        _widen(group.blocks, rec.block)
        if rec.address and len(group.addresses) < MAX_ADDRESSES and rec.address not in group.addresses:
            group.addresses.append(rec.address)
        if rec.xml_kind in ("Precise", "Imprecise"):
            self._context_dead = True  # later API errors are this error's fallout, not new defects

    def _new_group(self, rec: RawRecord, signature: str, case: str | None) -> _Group:
        loc = user_location(rec)
        fallout = self._context_dead and rec.xml_kind in ("Api", "Sanitizer")
        finding = Finding(
            signature=signature,
            tool=rec.tool,
            kind=rec.kind,
            message=rec.text,
            kernel=loc.func if is_cuda_header(rec.where.path) else (rec.where.func or loc.func),
            file=relative_path(loc.path, self.roots),
            line=loc.line,
            pc=loc.pc,
            space=rec.space,
            access=rec.access,
            size=rec.size,
            severity="warning" if rec.severity == "warning" else "error",
            host_frames=[_frame(f, m) for f, m in rec.host_frames()[:MAX_FRAMES]],
            device_frames=[
                f"{d.func or '?'} {relative_path(d.path, self.roots) or '?'}:{d.line}" for d in rec.device_stack
            ][:MAX_FRAMES],
            case=case,
            library=is_library(rec, loc),
            fallout=fallout,
            filtered=self.filtered and rec.tool is Tool.INITCHECK,
            sanitizer_version=self.sanitizer_version,
        )
        return _Group(finding)

    def findings(self) -> list[Finding]:
        out = []
        for group in self.groups.values():
            out.append(
                group.finding.model_copy(
                    update={
                        "count": group.count,
                        "hazards": group.hazards,
                        "threads": group.threads,
                        "blocks": group.blocks,
                        "addresses": group.addresses,
                    }
                )
            )
        return out


def group_records(records: Iterable[RawRecord], roots: Sequence[str]) -> list[Finding]:
    grouper = FindingGrouper(roots)
    for rec in records:
        grouper.add(rec)
    return grouper.findings()
