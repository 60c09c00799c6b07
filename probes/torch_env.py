"""Importing torch inside a probe: its CUDA allocator set up as asked (probes.allocator), `unavailable` when missing."""

from __future__ import annotations

from typing import Any

from probes.allocator import Allocator, activate, prepare
from probes.base import ProbeUnavailable, Recorder
from probes.contract import CaseResult, Tool


def import_torch(device: str, tool: Tool, recorder: Recorder, allocator: Allocator | None = None) -> Any:
    """torch, ready for `device`; on CUDA its allocator is `allocator` (default: no-caching under a sanitizer)."""
    state = prepare(allocator, tool) if device == "cuda" else None  # before torch's first CUDA allocation
    try:
        import torch
    except ImportError as exc:
        raise ProbeUnavailable(
            "torch is not installed: install the torch extra (pip install 'cuprobe[torch]')"
        ) from exc
    recorder.result.context["torch"] = torch.__version__
    if state is not None:
        recorder.result.context.update(state.context())
    if device == "cuda" and not torch.cuda.is_available():
        raise ProbeUnavailable(
            f"torch {torch.__version__} sees no CUDA device: run this case on a GPU worker (queue gpu.smXX)"
        )
    if state is not None:
        recorder.result.context.update(activate(state, torch).context())
    return torch


def record_tensors(recorder: Recorder, case: CaseResult, **tensors: Any) -> None:
    """Record the device address range of each CUDA tensor for attribution (CPU tensors have none)."""
    for name, tensor in tensors.items():
        if tensor.is_cuda:
            recorder.allocation(case, name, tensor.data_ptr(), tensor.untyped_storage().nbytes())
