"""Replay's digests in one Triton kernel per dtype, read straight from the tensors: no staging copy, no host fold.

probes/replay/batch.py lays a batch out in rows of ROW words (each tensor starting on a row), computes per row the
weighted word sum and max |x|, and folds the rows into one (hash, max |x|) per tensor on the host. On a GPU that
costs a copy of every tensor into a staging buffer, a product of the same size, three reductions and a fold on the
host after the copy: host time on a launch-bound step. This kernel computes the same per tensor in one pass per
dtype, reading each tensor where it lies through a table of data pointers and folding on the device (an atomic
add of each weighted row sum, which wraps modulo 2**64 in any order; an atomic max of |x|'s bits); the host copies
two numbers per tensor. replay_batch.launch uses it when Triton is there and it can read every tensor of the batch.

A tensor is read as int32 halves of the little-endian 64-bit words of its bytes, the last word zero-padded, exactly
as replay_digest.words reads it: contiguous, a dtype read as plain bits, 4-byte aligned, a whole number of 4-byte
units (`read` makes a flat or aligned copy where the staging path would, and gives up on the rest).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from cuprobe.probes.replay.digest import FLOATS, ROW, flat, word_weights

INTEGERS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
KERNEL_DTYPES = frozenset(FLOATS + INTEGERS)


FAILED: list[str] = []  # why the kernel could not run in this process, once it could not
USE = True  # False: every batch takes the staging path (bench/replay.py times both)


def available() -> bool:
    """Triton is there for this process's GPU (never on a CPU-only machine) and has not failed in it."""
    return USE and not FAILED and _importable()


@functools.cache
def _importable() -> bool:
    if not torch.cuda.is_available():
        return False
    try:
        _kernel()
    except Exception:  # no Triton, or one that cannot load here: the staging path serves
        return False
    return True


def give_up(exc: BaseException) -> None:
    """The kernel failed to build or launch: every later batch of this process takes the staging path."""
    FAILED.append(f"{type(exc).__name__}: {exc}")


@functools.cache
def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit  # type: ignore[untyped-decorator]
    def digest_rows(ptrs, sizes32, owner, starts, weights, row_weights, out, count, first_row,  # type: ignore[no-untyped-def]
                    ROW_WORDS: tl.constexpr, ELEMENT: tl.constexpr, FLOAT: tl.constexpr):
        row = first_row + tl.program_id(0)
        tensor = tl.load(owner + row)
        j = row - tl.load(starts + tensor)
        n32 = tl.load(sizes32 + tensor)
        address = tl.load(ptrs + tensor)
        base = address.to(tl.pointer_type(tl.int32))
        word = j * ROW_WORDS + tl.arange(0, ROW_WORDS)
        lo = tl.load(base + 2 * word, mask=2 * word < n32, other=0).to(tl.int64) & 0xFFFFFFFF
        hi = tl.load(base + 2 * word + 1, mask=2 * word + 1 < n32, other=0).to(tl.int64)
        w = tl.load(weights + tl.arange(0, ROW_WORDS))
        row_sum = tl.sum((lo | (hi << 32)) * w, axis=0)
        tl.atomic_add(out + tensor, row_sum * tl.load(row_weights + row))  # wraps modulo 2**64: any order
        if FLOAT:
            per_row: tl.constexpr = ROW_WORDS * 64 // ELEMENT.primitive_bitwidth
            elements = n32 * 4 // (ELEMENT.primitive_bitwidth // 8)
            index = j * per_row + tl.arange(0, per_row)
            x = tl.load(address.to(tl.pointer_type(ELEMENT)) + index, mask=index < elements, other=0).to(tl.float64)
            nan = tl.max((x != x).to(tl.int32), axis=0)
            peak = tl.where(nan > 0, float("nan"), tl.max(tl.abs(x), axis=0))
            # |x| >= 0 (and a NaN here is positive): as int64 bits these order as the values do, NaN above inf
            tl.atomic_max(out + count + tensor, peak.to(tl.int64, bitcast=True))

    return digest_rows


_TRITON_TYPES: dict[torch.dtype, str] = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
}


Key = tuple[tuple[torch.dtype, torch.Size], ...]


def read(tensors: list[torch.Tensor]) -> tuple[Key, list[int], list[torch.Tensor]] | None:
    """The batch's layout key, data pointers and the tensors read (one pass), or None when one cannot be read.

    A tensor that is not contiguous, or of a dtype read through another (bool as bytes, complex as pairs of its
    real type), is read from its contiguous flat copy, as the staging path reads it (replay_digest.flat); one
    that starts off a 4-byte boundary from an aligned copy of itself. A byte size that is not a multiple of 4
    cannot be read: the batch then takes the staging path."""
    key, ptrs, entries = [], [], []
    for t in tensors:
        if t.dtype not in KERNEL_DTYPES or not t.is_contiguous():
            t = flat(t)
            if t.dtype not in KERNEL_DTYPES:
                return None
        address = t.data_ptr()
        if address & 3:
            t = t.clone()
            address = t.data_ptr()
        if t.nbytes & 3:
            return None
        ptrs.append(address)
        key.append((t.dtype, t.shape))
        entries.append(t)
    return tuple(key), ptrs, entries


def digests(ptrs: list[int], entries: list[torch.Tensor], layout: Any, tables: Any,
            device: torch.device) -> tuple[torch.Tensor, Any]:
    """Every tensor's (hash, max |x| as float64 bits), on the device: the hashes, then the bits (int64), and what
    must stay alive until they are read (the pinned pointer table, the copies read). `tables`: the layout's on the
    device."""
    import triton.language as tl

    host = torch.tensor(ptrs, dtype=torch.int64, pin_memory=True)
    count = len(ptrs)
    out = torch.zeros(2 * count, dtype=torch.int64, device=device)
    kernel = _kernel()
    on_device = host.to(device, non_blocking=True)
    with torch.cuda.device(device):  # Triton launches on the current device: the batch's, in a multi-GPU program
        for dtype, (first, stop) in layout.spans.items():
            if stop <= first:
                continue
            floating = dtype.is_floating_point
            kernel[(stop - first,)](
                on_device, tables.sizes32, tables.owner, tables.starts, word_weights(device), tables.row_weight, out,
                count, first, ROW_WORDS=ROW, ELEMENT=getattr(tl, _TRITON_TYPES[dtype]) if floating else tl.int32,
                FLOAT=floating,
            )
    return out, (host, entries)
