"""Group raw records into Findings by signature (and case), with counts, ranges and examples."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cuprobe.contract import Allocation, Tool, is_confirm_control, is_control_kernel
from cuprobe.probes.kinds import HOST_API_UNINITIALIZED
from cuprobe.service.models import Finding
from cuprobe.service.sanitizer.flagged import AllocationIndex, FlaggedMemory
from cuprobe.service.sanitizer.launches import Launches
from cuprobe.service.sanitizer.records import UNUSED_MEMORY, Location, RawRecord

MAX_ADDRESSES = 3
MAX_FRAMES = 6
_VENDOR_LIBRARY = re.compile(
    r"lib(cublas|cublasLt|cudnn|cufft|curand|cusparse|cusolver|nccl|nvrtc|nvjitlink|torch|c10)[\w.]*\.so", re.I
)
# Kernels that live in libraries, by their (demangled) name: torch's ATen and c10, CUTLASS, cuBLAS's GEMM/GEMV
# families, cuDNN, CUB/Thrust, NCCL. Used when there is no user source line and no host backtrace to tell.
_LIBRARY_KERNEL = re.compile(
    r"\b(at::|c10::|cutlass::?|cublas|cublasLt|cudnn|cub::|thrust::|nccl|xmma|nvjet)"
    r"|^(void )?(sm\d+_|ampere_|volta_|turing_|hopper_|blackwell_|gemv|gemm|splitKreduce|dot_kernel|cutlass_)"
    # ATen's own kernels, by the bare name a device-only backtrace gives (no namespace, no module): seen on the H200
    # as `unrolled_elementwise_kernel`, the copy kernel behind torch's `.to()` / `.double()`.
    r"|^(void )?(unrolled_elementwise_kernel|vectorized_elementwise_kernel|elementwise_kernel|reduce_kernel"
    r"|index_elementwise_kernel|distribution_elementwise_grid_stride_kernel|CatArrayBatchedCopy\w*"
    r"|indexSelect\w*|indexFuncLargeIndex|indexFuncSmallIndex|softmax_warp_\w+|cunn_\w+)\b",
    re.I,
)
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
    for frame in rec.device_frames():
        if frame.path and not is_cuda_header(frame.path):
            return frame
    return rec.where


def is_library(rec: RawRecord, loc: Location) -> bool:
    """A report with no user source line whose code lives in a library (libtorch, cuBLAS, cuDNN...): told by the
    frame that launched it when there is a host backtrace, else by the kernel's name (device-only backtraces)."""
    if loc.path and not is_cuda_header(loc.path):
        return False
    kernels = [rec.where.func, loc.func, *(frame.func for frame in rec.device_frames())]
    if any(name and _LIBRARY_KERNEL.search(name) for name in kernels):
        return True
    launcher = next(
        (module for func, module in rec.host_frames() if module and not _DRIVER_LIBRARY.search(module)), None
    )
    return bool(launcher and _VENDOR_LIBRARY.search(launcher))


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


# Records of a host API call, told apart by the user's call site (they have no kernel or source line).
_CALL_SITE_KINDS = ("api-error", HOST_API_UNINITIALIZED)


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
    if rec.kind in _CALL_SITE_KINDS:
        parts.append("@" + first_user_frame(rec))
    if rec.severity == "warning" and "warning" not in rec.kind:
        parts.append("warning")  # a warning and an error at the same place are two findings
    return bounded("|".join(parts))


def case_of(address: str | None, allocations: Sequence[tuple[str, Allocation]]) -> str | None:
    """The case whose buffer holds `address`, by the allocation map the probe recorded."""
    found = AllocationIndex(allocations).locate(address)
    return found[0] if found else None


@dataclass
class _Group:
    """A finding being built; counts live here (not on the pydantic model) because they change per record."""

    finding: Finding
    fallout_kind: bool = False  # its first record is an API or sanitizer error: fallout if a precise error came first
    count: int = 0
    hazards: int | None = None
    threads: dict[str, list[int]] = field(default_factory=dict)
    blocks: dict[str, list[int]] = field(default_factory=dict)
    addresses: list[str] = field(default_factory=list)
    flagged: FlaggedMemory = field(default_factory=FlaggedMemory)


def _widen(ranges: dict[str, list[int]], dim: tuple[int, int, int] | None) -> None:
    if dim is None:
        return
    x, y, z = dim
    rx, ry, rz = ranges.get("x"), ranges.get("y"), ranges.get("z")
    if rx is None or ry is None or rz is None:
        for axis, value in zip(_AXES, dim, strict=True):
            low_high = ranges.setdefault(axis, [value, value])
            low_high[0], low_high[1] = min(low_high[0], value), max(low_high[1], value)
        return
    # Once per record: compare in place rather than through min() and max().
    if x < rx[0]:
        rx[0] = x
    elif x > rx[1]:
        rx[1] = x
    if y < ry[0]:
        ry[0] = y
    elif y > ry[1]:
        ry[1] = y
    if z < rz[0]:
        rz[0] = z
    elif z > rz[1]:
        rz[1] = z


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
        self.index = AllocationIndex(self.allocations)
        # The confirmer's planted cases run after the probe's own and may reuse its freed addresses: a record maps
        # to a planted case only when its kernel is one of theirs, and to the probe's cases only otherwise.
        self._control_index = AllocationIndex([a for a in self.allocations if is_confirm_control(a[0])])
        self._own_index = AllocationIndex([a for a in self.allocations if not is_confirm_control(a[0])])
        self._signatures: dict[tuple[object, ...], str] = {}
        self.single_case = single_case
        self.sanitizer_version = sanitizer_version
        self.filtered = filtered
        self.groups: dict[tuple[str, str | None], _Group] = {}
        self._context_dead = False
        # The case of the latest record: when parsing stops at the record cap, counts from here on are partial.
        self.last_case: str | None = None
        # --dump-kernel-launches records: counted here, never findings, never against the record cap.
        self.launches = Launches()

    def take_launch(self, rec: RawRecord) -> bool:
        """Count `rec` if it is a launch record (LaunchInfo); whether it was."""
        if rec.launch_filtered is None:
            return False
        self.launches.add(rec.detail, rec.launch_filtered)
        return True

    def _signature(self, rec: RawRecord) -> str:
        """signature_of, remembered for records that differ only in what it leaves out (threads, addresses)."""
        if rec.kind in ("leak", UNUSED_MEMORY, *_CALL_SITE_KINDS) or is_cuda_header(rec.where.path):
            return signature_of(rec, self.roots)  # these read the host or device stack
        key = (rec.tool, rec.kind, rec.where, rec.peers, rec.space, rec.access, rec.size, rec.detail, rec.severity)
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._signatures[key] = signature_of(rec, self.roots)
        return signature

    def _place(self, rec: RawRecord) -> tuple[str, str | None, tuple[str, int] | None]:
        """(signature, case, (buffer, offset) or None) of one record."""
        if is_control_kernel(rec.where.func):
            found = self._control_index.locate(rec.address)
            case = found[0] if found else None
        else:
            found = self._own_index.locate(rec.address)
            case = found[0] if found else self.single_case
        return self._signature(rec), case, (found[1].name, found[2]) if found else None

    def add(self, rec: RawRecord) -> None:
        signature, case, where = self._place(rec)
        self.last_case = case or self.last_case
        group = self.groups.get((signature, case))
        if group is None:
            group = self._new_group(rec, signature, case)
            self.groups[(signature, case)] = group
        group.count += 1
        self._flag(group, rec, where)
        if rec.hazards is not None:
            group.hazards = (group.hazards or 0) + rec.hazards
        _widen(group.threads, rec.thread)
        _widen(group.blocks, rec.block)
        if rec.address and len(group.addresses) < MAX_ADDRESSES and rec.address not in group.addresses:
            group.addresses.append(rec.address)
        if rec.xml_kind in ("Precise", "Imprecise"):
            self._context_dead = True  # later API errors are this error's fallout, not new defects

    def count_only(self, rec: RawRecord) -> None:
        """A record past the record cap: not kept, but the memory it read still counts for its finding."""
        signature, case, where = self._place(rec)
        group = self.groups.get((signature, case))
        if group is not None:
            self._flag(group, rec, where)

    @staticmethod
    def _flag(group: _Group, rec: RawRecord, where: tuple[str, int] | None) -> None:
        if rec.tool is Tool.INITCHECK and rec.address:
            group.flagged.add(where[0] if where else None, where[1] if where else 0, rec.size or 1)

    def flagged(self) -> dict[tuple[str, str | None], FlaggedMemory]:
        """The memory each (signature, case) read, over every record parsed (kept or past the cap)."""
        return {key: group.flagged for key, group in self.groups.items() if group.flagged.records}

    def absorb_flagged(self, later: FindingGrouper) -> None:
        """Fold in only the flagged memory of later records past the cap, for findings already kept."""
        for key, theirs in later.groups.items():
            if key in self.groups:
                self.groups[key].flagged.absorb(theirs.flagged)

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
                f"{d.func or '?'} {relative_path(d.path, self.roots) or '?'}:{d.line}" for d in rec.device_frames()
            ][:MAX_FRAMES],
            case=case,
            library=is_library(rec, loc),
            fallout=fallout,
            filtered=self.filtered and rec.tool is Tool.INITCHECK,
            sanitizer_version=self.sanitizer_version,
        )
        return _Group(finding, fallout_kind=rec.xml_kind in ("Api", "Sanitizer"))

    def absorb(self, later: FindingGrouper, *, controls_only: bool = False) -> None:
        """Fold in the groups of the records that come right after this grouper's (the next piece of one file);
        with `controls_only`, just the confirmer's planted cases (kept past the record cap)."""
        for key, theirs in later.groups.items():
            if controls_only and not is_confirm_control(key[1]):
                continue
            mine = self.groups.get(key)
            if mine is None:
                if self._context_dead and theirs.fallout_kind and not theirs.finding.fallout:
                    theirs.finding = theirs.finding.model_copy(update={"fallout": True})
                self.groups[key] = theirs
                continue
            mine.count += theirs.count
            if theirs.hazards is not None:
                mine.hazards = (mine.hazards or 0) + theirs.hazards
            for mine_ranges, their_ranges in ((mine.threads, theirs.threads), (mine.blocks, theirs.blocks)):
                for axis, (low, high) in their_ranges.items():
                    ours = mine_ranges.setdefault(axis, [low, high])
                    ours[0], ours[1] = min(ours[0], low), max(ours[1], high)
            for address in theirs.addresses:
                if len(mine.addresses) < MAX_ADDRESSES and address not in mine.addresses:
                    mine.addresses.append(address)
            mine.flagged.absorb(theirs.flagged)
        if controls_only:  # records past the cap: they neither kill the context nor move where truncation fell
            return
        self._context_dead = self._context_dead or later._context_dead
        self.last_case = later.last_case or self.last_case

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
