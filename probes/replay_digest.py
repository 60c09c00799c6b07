"""On-device tensor digests for replay: an exact integer sum of the raw bits, and the extremes for max |x|."""

from __future__ import annotations

from typing import Any

import torch

# Integer views per element width: integer sums wrap, so they are exact in any reduction order (GPU too).
BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


def bits_sum(tensor: torch.Tensor) -> torch.Tensor:
    """A 0-d int64 tensor on the tensor's device: the wrapping sum of its raw bit patterns."""
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.dtype is torch.bool:
        flat = flat.view(torch.uint8)
    nbytes = flat.numel() * flat.element_size()
    wide = nbytes % 8 == 0 and (flat.storage_offset() * flat.element_size()) % 8 == 0
    if flat.element_size() < 8 and wide and flat.numel() > 0:
        return flat.view(torch.int64).sum()  # pairs/quads of elements as one int64: the fastest exact sum
    return flat.view(BITS[flat.element_size()]).sum(dtype=torch.int64)


def extremes(tensor: torch.Tensor) -> torch.Tensor:
    """A float32 [min, max] on the tensor's device (NaN when any element is NaN); zeros for non-floats."""
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if not flat.is_floating_point() or flat.numel() == 0:
        return torch.zeros(2, dtype=torch.float32, device=flat.device)
    return torch.stack(torch.aminmax(flat)).float()


def digest(tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(bits sum, [min, max]), both still on the tensor's device: no host copy, no synchronisation."""
    with torch.no_grad():
        return bits_sum(tensor), extremes(tensor)


def magnitude(low: float, high: float) -> float:
    """max |x| from the extremes; NaN stays NaN."""
    return max(abs(low), abs(high)) if low == low and high == high else float("nan")


def describe(tensor: torch.Tensor) -> dict[str, Any]:
    """Shape and dtype, as stored with every record."""
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch.")}
