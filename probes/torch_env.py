"""Importing torch inside a probe: its CUDA allocator set up as asked (probes.allocator), `unavailable` when missing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.allocator import Allocator, activate, prepare
from cuprobe.probes.base import ProbeUnavailable, Recorder
from cuprobe.probes.prefetch import wait_for_import


def import_torch(device: str, tool: Tool, recorder: Recorder, allocator: Allocator | None = None) -> Any:
    """torch, ready for `device`; on CUDA its allocator is `allocator` (default: no-caching under a sanitizer), or,
    in the confirmer's poisoned runs, one that fills every fresh block with the poison byte."""
    wait_for_import()  # an early import still running (--prefetch-torch): the environment is not written beside it
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
    if state is not None and recorder.poison.active:
        if "poisoning_allocator" not in recorder.result.context:
            _poison_torch(torch, recorder)
    elif state is not None:
        recorder.result.context.update(activate(state, torch).context())
    return torch


# The poisoning allocator this process installed (its library, loaded): torch takes an allocator once per process,
# so a later run of the process (`--then`, the confirmer's re-runs sharing a process) only changes its fill.
_installed: dict[str, Any] = {}


def _poison_torch(torch: Any, recorder: Recorder) -> None:
    """Every fresh CUDA block torch takes (torch.empty, a matmul's output, cuBLAS workspace) comes poisoned.

    torch's own fill_uninitialized_memory covers only torch.empty*; the outputs of ops come straight from the
    allocator, so the allocator is what has to fill. It never caches: each block is fresh.
    """
    import ctypes

    from cuprobe.kernels.poison_alloc import FREE, MALLOC, AllocatorBuildError, build

    fill = recorder.poison.plan.fill
    if "library" not in _installed:
        try:
            path = build()
        except AllocatorBuildError as exc:
            raise ProbeUnavailable(f"cannot poison torch's CUDA memory: {exc}") from exc
        library = ctypes.CDLL(str(path))
        library.cuprobe_set_poison(fill)
        torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(str(path), MALLOC, FREE))
        _installed.update(library=library, name=path.name)
    else:
        _installed["library"].cuprobe_set_poison(fill)
    recorder.result.context["poisoning_allocator"] = f"{_installed['name']}, fill 0x{fill:02X}"


def tensor_bytes(tensor: Any) -> Callable[[], Any]:
    """Reads a CUDA tensor's whole storage back as raw bytes, when called (a checkpoint)."""

    def read() -> Any:
        import torch

        raw = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())
        torch.cuda.synchronize()
        return raw.cpu().numpy()

    return read


def tensor_values(tensor: Any) -> Callable[[], Any]:
    """A tensor's values as a numpy array, when called: bf16 and half widened to float32 (exactly)."""

    def read() -> Any:
        import torch

        t = tensor.detach()
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.float()
        return t.cpu().numpy()

    return read




def record_tensors(recorder: Recorder, case: CaseResult, **tensors: Any) -> None:
    """Record the device address range of each CUDA tensor for attribution (CPU tensors have none)."""
    for name, tensor in tensors.items():
        if tensor.is_cuda:
            recorder.allocation(case, name, tensor.data_ptr(), tensor.untyped_storage().nbytes())
