"""Tensor digests for replay: a position-weighted hash of the raw bits, and max |x| for the magnitude watch.

The hash: the tensor's bytes (C order) as 8-byte little-endian words, the last one zero-padded, laid out in rows of
ROW words (the last row zero-padded); each row's words are multiplied by fixed odd weights and summed, the row sums
multiplied by fixed odd row weights and summed, all modulo 2**64. Integer arithmetic wraps, so the result is the
same in any reduction order and on any device. A change confined to one word (any single bit, any one element) always
changes it: an odd weight times a non-zero word difference is non-zero modulo 2**64. Changes in several words cancel
only when their weighted differences sum to zero modulo 2**64: about 2**-(63 - v) for differences whose lowest set
bit is bit v, so rounding-level changes (low mantissa bits) practically never cancel, while changes confined to the
top bits of words can (two words that differ only in bit 63, e.g. the sign of the upper float32 of each, always do).
Swapped elements change it (the weights depend on the position). probes/replay/batch.py computes the same function
for many tensors at once.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import torch

ROW = 1024  # words per row: rows are what the batched path reduces in parallel
MASK = (1 << 64) - 1
WORD_STREAM, ROW_STREAM = 1, 2

# Integer views per element width, for bitwise comparisons of whole tensors.
BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def weight(stream: int, i: int) -> int:
    """The odd weight number `i` of a stream, as a signed 64-bit value (what an int64 tensor holds)."""
    return _signed(_splitmix64((stream << 40) + i) | 1)


@lru_cache(maxsize=16)
def _weights(stream: int, n: int, device: str) -> torch.Tensor:
    values = torch.tensor([weight(stream, i) for i in range(n)], dtype=torch.int64)
    return values.to(device)


def word_weights(device: torch.device | str = "cpu") -> torch.Tensor:
    """The ROW word weights (int64) on `device`."""
    return _weights(WORD_STREAM, ROW, str(device))


def row_weights(rows: int) -> torch.Tensor:
    """The first `rows` row weights (int64, CPU); grown in powers of two so few sizes are cached."""
    size = 1 << max(rows - 1, 0).bit_length()
    return _weights(ROW_STREAM, max(size, 1), "cpu")[:rows]


def flat(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's elements, contiguous and 1-d, as a dtype whose bytes are its raw bits (complex as pairs)."""
    out = tensor.detach().reshape(-1).contiguous()
    if out.is_complex():
        out = torch.view_as_real(out).reshape(-1)
    return out.view(torch.uint8) if out.dtype is torch.bool else out


def nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def rows_of(size: int) -> int:
    """Rows a tensor of `size` bytes occupies."""
    return math.ceil(size / (8 * ROW))


def words(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as int64 words on its device, the last word zero-padded."""
    data = flat(tensor)
    if data.numel() == 0:
        return torch.zeros(0, dtype=torch.int64, device=data.device)
    raw = data.view(torch.uint8) if data.element_size() > 1 else data
    if raw.storage_offset() % 8:
        raw = raw.clone()  # a view that starts mid-word: its own allocation is aligned
    whole, tail = divmod(raw.numel(), 8)
    if tail == 0:
        return raw.view(torch.int64)
    padded = torch.zeros((whole + 1) * 8, dtype=torch.uint8, device=raw.device)
    padded[: raw.numel()] = raw
    return padded.view(torch.int64)


def bits_hash(tensor: torch.Tensor) -> int:
    """The digest of one tensor (computed on the CPU: integer matrix-vector products are CPU-only in torch)."""
    w = words(tensor).cpu()
    whole, tail = divmod(w.numel(), ROW)
    weights = word_weights("cpu")
    sums = torch.mv(w[: whole * ROW].view(whole, ROW), weights) if whole else w.new_zeros(0)
    if tail:
        sums = torch.cat([sums, torch.dot(w[whole * ROW :], weights[:tail]).view(1)])
    return int(torch.dot(sums, row_weights(sums.numel()))) if sums.numel() else 0


def max_abs(tensor: torch.Tensor) -> float:
    """max |x| (float64; NaN when any element is NaN); 0 for integer, bool and empty tensors."""
    data = flat(tensor)
    if not data.is_floating_point() or data.numel() == 0:
        return 0.0
    if data.dtype not in FLOATS:
        data = data.float()  # float8 and other narrow types: exact in float32
    low, high = torch.aminmax(data)
    return magnitude(float(low), float(high))


def digest(tensor: torch.Tensor) -> tuple[int, float]:
    """(bits hash, max |x|) of one tensor, computed now."""
    with torch.no_grad():
        return bits_hash(tensor), max_abs(tensor)


def magnitude(low: float, high: float) -> float:
    """max |x| from the extremes; NaN stays NaN."""
    return max(abs(low), abs(high)) if low == low and high == high else float("nan")


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """`float32` for torch.float32 (cached: every record asks)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def describe(tensor: torch.Tensor) -> dict[str, Any]:
    """Shape and dtype, as stored with every record."""
    return {"shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype)}
