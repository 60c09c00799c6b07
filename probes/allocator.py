"""The torch-probe option `allocator`: caching-nvtx | caching | no-caching, set up before torch touches CUDA."""

from __future__ import annotations

from typing import Any, Literal, get_args

from cuprobe import internal_env
from cuprobe.contract import Tool
from cuprobe.probes import allocator_state
from cuprobe.probes.allocator_state import (
    CALL_LOG_ENV,
    NO_CACHING,
    AllocatorState,
    current,
    fall_back,
    final_context,
)

Allocator = Literal["caching-nvtx", "caching", "no-caching"]
ALLOCATORS: tuple[str, ...] = get_args(Allocator)
# What cuprobe's pytest plugin in a user's test process reads.
ENV = internal_env.ALLOCATOR
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


def prepare(requested: Allocator | None, tool: Tool) -> AllocatorState:
    """Set up the allocator `requested` (the tool's default when None) before torch's first CUDA allocation."""
    return allocator_state.prepare(requested or default_allocator(tool))


def activate(state: AllocatorState, torch: Any) -> AllocatorState:
    """For caching-nvtx: build or load the extension and attach it, else fall back to no-caching."""
    from cuprobe.kernels.extension import ExtensionUnavailable, load

    allocator_state.activate(state, torch, load, ExtensionUnavailable)
    return state


__all__ = [
    "CALL_LOG_ENV",
    "NO_CACHING",
    "AllocatorState",
    "activate",
    "current",
    "fall_back",
    "final_context",
    "prepare",
]
