"""Replay's per-row digest results in one Triton kernel per dtype, read straight from the tensors (no staging copy).

probes/replay_batch.py lays a batch out in rows of ROW words (each tensor starting on a row) and computes, per row,
the weighted word sum and max |x|. On a GPU its way costs a copy of every tensor into a staging buffer, a product
of the same size and three reductions: several launches and passes over the data on a launch-bound step. This
kernel computes the same two numbers per row in one pass, reading each tensor where it lies through a table of
data pointers; replay_batch.launch uses it when Triton is there and every tensor of the batch qualifies
(`qualifies`), and folds its rows exactly as before.

A tensor qualifies when it is contiguous, on a CUDA device, of a dtype read as plain bits (no bool or complex, no
narrow float), with a 4-byte aligned start and a byte size that is a multiple of 4: its bytes are then read as
int32 halves of the little-endian 64-bit words, the last word zero-padded, exactly as replay_digest.words does.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from probes.replay_digest import FLOATS, ROW, word_weights

INTEGERS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


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


def qualifies(tensor: torch.Tensor) -> bool:
    dtype = tensor.dtype
    return (
        (dtype in FLOATS or dtype in INTEGERS)
        and tensor.is_cuda
        and tensor.is_contiguous()
        and tensor.data_ptr() % 4 == 0
        and (tensor.numel() * tensor.element_size()) % 4 == 0
    )


@functools.cache
def _kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit  # type: ignore[untyped-decorator]
    def rows_kernel(ptrs, sizes32, owner, starts, weights, sums, peaks, first_row,  # type: ignore[no-untyped-def]
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
        tl.store(sums + row, tl.sum((lo | (hi << 32)) * w, axis=0))
        if FLOAT:
            per_row: tl.constexpr = ROW_WORDS * 64 // ELEMENT.primitive_bitwidth
            count = n32 * 4 // (ELEMENT.primitive_bitwidth // 8)
            index = j * per_row + tl.arange(0, per_row)
            x = tl.load(address.to(tl.pointer_type(ELEMENT)) + index, mask=index < count, other=0).to(tl.float64)
            nan = tl.max((x != x).to(tl.int32), axis=0)
            peak = tl.max(tl.abs(x), axis=0)
            tl.store(peaks + row, tl.where(nan > 0, float("nan"), peak))
        else:
            tl.store(peaks + row, 0.0)

    return rows_kernel


_TRITON_TYPES: dict[torch.dtype, str] = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
}


def rows(entries: list[torch.Tensor], layout: Any, tables: Any) -> tuple[torch.Tensor, Any]:
    """The per-row results of `layout` (row sums, then the rows' max |x| as float64 bits: replay_batch's result) and
    what must stay alive until they are read (the pinned pointer table). `tables`: the layout's on the device."""
    import triton.language as tl

    device = entries[0].device
    host = torch.tensor([t.data_ptr() for t in entries], dtype=torch.int64).pin_memory()
    ptrs = host.to(device, non_blocking=True)
    result = torch.empty(2 * layout.rows, dtype=torch.int64, device=device)
    sums, peaks = result[: layout.rows], result[layout.rows :].view(torch.float64)
    kernel = _kernel()
    for dtype, (first, stop) in layout.spans.items():
        if stop <= first:
            continue
        floating = dtype.is_floating_point
        element = getattr(tl, _TRITON_TYPES[dtype]) if floating else tl.int32
        kernel[(stop - first,)](
            ptrs, tables.sizes32, tables.owner, tables.starts, word_weights(device), sums, peaks, first,
            ROW_WORDS=ROW, ELEMENT=element, FLOAT=floating,
        )
    return result, host
