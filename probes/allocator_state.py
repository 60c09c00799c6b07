"""torch's CUDA allocator as a process set it up: asked for, in use, and why they differ.

Standard library only, with no cuprobe import: cuprobe's pytest plugin loads this file by path into a user's test
process, whose interpreter has none of cuprobe's dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NO_CACHING = "PYTORCH_NO_CUDA_MEMORY_CACHING"
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
# Where the NVTX extension writes every call it makes, one a line (empty: no log).
CALL_LOG_ENV = "CUPROBE_NVTX_CALL_LOG"  # cuprobe/internal_env.py's NVTX_CALL_LOG


@dataclass
class AllocatorState:
    """What was asked for, what is in use, and why they differ (the fallback reason)."""

    requested: str
    effective: str
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


def prepare(choice: str) -> AllocatorState:
    """Set the environment torch reads at its first CUDA allocation; call before any CUDA tensor exists."""
    global _STATE
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


def activate(state: AllocatorState, torch: Any, load: Callable[[], Any], unavailable: type[Exception]) -> None:
    """For caching-nvtx: `load()` the NVTX extension (built or found) and attach it; where it raises `unavailable`,
    fall back to no-caching with its message."""
    if state.effective != "caching-nvtx" or state.extension:
        return
    try:
        ext = load()
        torch.cuda.init()  # the allocator's per-device state exists only after CUDA is initialised
        attached = ext.attach(os.environ.get(CALL_LOG_ENV, ""))
        seeded = ext.seed(torch.cuda.memory_snapshot())
    except unavailable as exc:
        fall_back(state, str(exc))
        return
    state.loaded = ext
    state.extension = {
        "library": str(ext.path),
        "build_s": ext.build_s,
        "cached": ext.cached,
        "attached": attached,
        "blocks_seeded": seeded,
    }


def current() -> AllocatorState | None:
    """The allocator this process set up (None when nothing asked)."""
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
