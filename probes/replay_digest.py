"""On-device tensor digests for replay: an exact integer sum of the raw bits and the largest magnitude."""

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


def magnitude(tensor: torch.Tensor) -> torch.Tensor:
    """A 0-d float32 tensor: max |x| (NaN when any element is NaN, inf when any is inf); 0 for non-floats."""
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if not flat.is_floating_point() or flat.numel() == 0:
        return torch.zeros((), dtype=torch.float32, device=flat.device)
    low, high = torch.aminmax(flat)
    return torch.maximum(high, -low).float()  # maximum propagates NaN, as aminmax does


def digest(tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(bits sum, max |x|), both still on the tensor's device: no host copy, no synchronisation."""
    with torch.no_grad():
        return bits_sum(tensor), magnitude(tensor)


def describe(tensor: torch.Tensor) -> dict[str, Any]:
    """Shape and dtype, as stored with every record."""
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch.")}
