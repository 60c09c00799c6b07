"""Importing torch inside a probe: uncached CUDA allocations under a sanitizer, `unavailable` when missing."""

from __future__ import annotations

import os
from typing import Any

from probes.base import ProbeUnavailable, Recorder
from probes.contract import CaseResult, Tool

NO_CACHING = "PYTORCH_NO_CUDA_MEMORY_CACHING"


def import_torch(device: str, tool: Tool, recorder: Recorder) -> Any:
    """torch, ready for `device`; under a sanitizer the caching allocator is off (it hides defects)."""
    if device == "cuda" and tool is not Tool.NONE and NO_CACHING not in os.environ:
        os.environ[NO_CACHING] = "1"  # read when torch first allocates on CUDA, so set before importing
        recorder.result.context["no_caching_set_by_probe"] = True
    try:
        import torch
    except ImportError as exc:
        raise ProbeUnavailable(
            "torch is not installed: install the torch extra (pip install 'cuprobe[torch]')"
        ) from exc
    recorder.result.context[NO_CACHING] = os.environ.get(NO_CACHING)
    recorder.result.context["torch"] = torch.__version__
    if device == "cuda" and not torch.cuda.is_available():
        raise ProbeUnavailable(
            f"torch {torch.__version__} sees no CUDA device: run this case on a GPU worker (queue gpu.smXX)"
        )
    return torch


def record_tensors(recorder: Recorder, case: CaseResult, **tensors: Any) -> None:
    """Record the device address range of each CUDA tensor for attribution (CPU tensors have none)."""
    for name, tensor in tensors.items():
        if tensor.is_cuda:
            recorder.allocation(case, name, tensor.data_ptr(), tensor.untyped_storage().nbytes())
