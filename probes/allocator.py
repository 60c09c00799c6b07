"""The torch-probe option `allocator`: caching-nvtx | caching | no-caching, set up before torch touches CUDA."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from cuprobe.contract import Tool

Allocator = Literal["caching-nvtx", "caching", "no-caching"]
ALLOCATORS: tuple[str, ...] = get_args(Allocator)
NO_CACHING = "PYTORCH_NO_CUDA_MEMORY_CACHING"
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
# What a user's own pytest run (probes.allocator_plugin) reads.
ENV = "CUPROBE_ALLOCATOR"
# Where the extension writes every NVTX call it makes, one a line (empty: no log).
CALL_LOG_ENV = "CUPROBE_NVTX_CALL_LOG"
# Under a sanitizer: caching-nvtx found both planted defects on the H200 (docs/allocator.md, measured table).
SANITIZED_DEFAULT: Allocator = "caching-nvtx"
FIELD_DESCRIPTION = (
    "torch's CUDA allocator: caching-nvtx (caching, its segments and blocks registered with the sanitizer "
    "through NVTX; falls back to no-caching, with the reason, where the extension cannot load), caching "
    "(torch's default), no-caching (PYTORCH_NO_CUDA_MEMORY_CACHING=1); default: "
    f"{SANITIZED_DEFAULT} under a sanitizer, caching bare"
)


def default_allocator(tool: Tool) -> Allocator:
    """The allocator a torch probe uses when its params name none."""
    return SANITIZED_DEFAULT if tool is not Tool.NONE else "caching"


def parse_allocator(value: str) -> Allocator:
    """`value` as an Allocator; ValueError naming the choices otherwise."""
    if value not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {', '.join(ALLOCATORS)} (got {value!r})")
    return value  # type: ignore[return-value]


def needs_nvtx(params: dict[str, Any]) -> bool:
    """Whether a run with these (resolved) probe params needs `compute-sanitizer --nvtx yes`."""
    return params.get("allocator") == "caching-nvtx"


@dataclass
class AllocatorState:
    """What was asked for, what is in use, and why they differ (the fallback reason)."""

    requested: Allocator
    effective: Allocator
    fallback: str | None = None
    extension: dict[str, Any] = field(default_factory=dict)
    loaded: Any = field(default=None, repr=False)

    def context(self) -> dict[str, Any]:
        """Recorded on every result: result.json's context and so the stored RunResult's probe_context."""
        out: dict[str, Any] = {
            "allocator": self.effective,
            "allocator_requested": self.requested,
            NO_CACHING: os.environ.get(NO_CACHING),
        }
        if self.fallback:
            out["allocator_fallback"] = self.fallback
        if self.extension:
            out["allocator_extension"] = self.extension
        return out


_STATE: AllocatorState | None = None


def prepare(requested: Allocator | None, tool: Tool) -> AllocatorState:
    """Set the environment torch reads at its first CUDA allocation; call before any CUDA tensor exists."""
    global _STATE
    choice = requested or default_allocator(tool)
    if _STATE is not None:
        if _STATE.requested != choice:
            raise ValueError(f"allocator {choice} asked for after {_STATE.requested} was set up in this process")
        return _STATE
    state = AllocatorState(requested=choice, effective=choice)
    if choice == "caching-nvtx" and "expandable_segments:true" in os.environ.get(ALLOC_CONF, "").lower():
        fall_back(state, f"{ALLOC_CONF} turns on expandable segments, whose mapped pages are not registered")
    elif choice == "no-caching":
        os.environ[NO_CACHING] = "1"
    else:
        os.environ.pop(NO_CACHING, None)  # the service sets it under memcheck and initcheck: caching was asked for
    _STATE = state
    return state


def activate(state: AllocatorState, torch: Any) -> AllocatorState:
    """For caching-nvtx: build or load the extension and attach it, else fall back to no-caching."""
    if state.effective != "caching-nvtx" or state.extension:
        return state
    from cuprobe.kernels.extension import ExtensionUnavailable, load

    try:
        ext = load()
        torch.cuda.init()  # the allocator's per-device state exists only after CUDA is initialised
        attached = ext.attach(os.environ.get(CALL_LOG_ENV, ""))
        seeded = ext.seed(torch.cuda.memory_snapshot())
    except ExtensionUnavailable as exc:
        fall_back(state, str(exc))
        return state
    state.loaded = ext
    state.extension = {
        "library": str(ext.path),
        "build_s": ext.build_s,
        "cached": ext.cached,
        "attached": attached,
        "blocks_seeded": seeded,
    }
    return state


def current() -> AllocatorState | None:
    """The allocator this process set up (None when no torch probe asked)."""
    return _STATE


def final_context(state: AllocatorState, torch: Any) -> dict[str, Any]:
    """What shows which allocator really ran: bytes torch's cache holds (0 uncached), the tracker's counters."""
    out = state.context()
    if torch.cuda.is_initialized():
        out["allocator_reserved_bytes"] = int(torch.cuda.memory_reserved())
    if state.loaded is not None:
        out["allocator_nvtx_counts"] = state.loaded.counts()
    return out


def fall_back(state: AllocatorState, reason: str) -> None:
    """Use no-caching instead of caching-nvtx, saying why (must run before torch's first CUDA allocation)."""
    state.effective = "no-caching"
    state.fallback = f"caching-nvtx fell back to no-caching: {reason}"
    os.environ[NO_CACHING] = "1"
