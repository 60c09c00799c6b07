"""Replay's digests of many tensors at once, for launch-bound devices: a few kernel launches per batch.

The same function as probes/replay/digest.py's per-tensor `digest`: every tensor of a batch is copied into one
zero-padded staging buffer of ROW-word rows (each tensor starts on a row), then one multiply and one row sum give
every row's weighted word sum, and one inf-norm per float dtype every row's max |x|. The per-row results
stay on the device until `resolve`, which copies them to the host in one transfer and folds them into one
(hash, max |x|) per tensor there. Held on the device between batches: the staging buffer (the largest batch so
far, rounded up to whole rows per tensor); during a batch, one product of the same size.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import torch

from cuprobe.probes.replay import triton as replay_triton
from cuprobe.probes.replay.digest import FLOATS, ROW, flat, row_weights, rows_of, word_weights

PLAIN = {torch.bool, torch.complex32, torch.complex64, torch.complex128}  # dtypes `flat` reinterprets
LAYOUTS_KEPT = 8


@dataclass
class Layout:
    """Where each tensor of a batch sits in the staging buffer; cached, since every step repeats its batches."""

    rows: int
    starts: list[int]
    groups: dict[torch.dtype, list[int]]  # dtype -> positions in the batch, copied with one foreach call
    float_runs: list[tuple[torch.dtype, int, int]]  # rows [start, stop) that hold one float dtype
    owner: torch.Tensor  # per row: the batch position of its tensor (CPU int64)
    row_weight: torch.Tensor  # per row: its weight within its tensor (CPU int64)
    spans: dict[torch.dtype, tuple[int, int]]  # dtype -> its rows [start, stop)
    sizes32: list[int]  # per tensor: its size in 4-byte units (what the Triton kernel reads)
    targets: dict[torch.dtype, list[torch.Tensor]] = field(default_factory=dict)  # views into `buffer`
    buffer: torch.Tensor | None = None
    tables: dict[torch.device, Tables] = field(default_factory=dict)


@dataclass
class Tables:
    """A layout's per-tensor and per-row tables on one device, for the Triton kernel."""

    sizes32: torch.Tensor
    owner: torch.Tensor
    starts: torch.Tensor
    row_weight: torch.Tensor


def nbytes_of(entry: tuple[torch.dtype, torch.Size]) -> int:
    return entry[1].numel() * entry[0].itemsize


def _layout(key: tuple[tuple[torch.dtype, torch.Size], ...]) -> Layout:
    groups: dict[torch.dtype, list[int]] = {}
    for i, (dtype, _) in enumerate(key):
        groups.setdefault(dtype, []).append(i)  # one dtype per run of rows: one norm per float dtype
    starts, owner, weights, row = [0] * len(key), [], [], 0
    spans: dict[torch.dtype, tuple[int, int]] = {}
    for dtype, positions in groups.items():
        first = row
        for i in positions:
            starts[i], count = row, rows_of(nbytes_of(key[i]))
            owner += [i] * count
            weights.append(row_weights(count))
            row += count
        spans[dtype] = (first, row)
    runs = [(dtype, a, b) for dtype, (a, b) in spans.items() if dtype.is_floating_point and b > a]
    return Layout(
        rows=row,
        starts=starts,
        groups={d: [i for i in p if key[i][1].numel()] for d, p in groups.items()},
        float_runs=runs,
        owner=torch.tensor(owner, dtype=torch.int64),
        row_weight=torch.cat(weights) if weights else torch.zeros(0, dtype=torch.int64),
        spans=spans,
        sizes32=[nbytes_of(entry) // 4 for entry in key],
    )


def device_tables(layout: Layout, device: torch.device) -> Tables:
    found = layout.tables.get(device)
    if found is None:
        found = layout.tables[device] = Tables(
            sizes32=torch.tensor(layout.sizes32, dtype=torch.int64).to(device),
            owner=layout.owner.to(device),
            starts=torch.tensor(layout.starts, dtype=torch.int64).to(device),
            row_weight=layout.row_weight.to(device),
        )
    return found


class Stager:
    """The staging buffer and layouts of one device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.buffer = torch.zeros(0, ROW, dtype=torch.int64, device=device)
        self.layouts: OrderedDict[tuple[tuple[torch.dtype, torch.Size], ...], Layout] = OrderedDict()
        self.last: Layout | None = None  # the layout whose data the buffer holds: its padding is still zero

    def cached(self, key: tuple[tuple[torch.dtype, torch.Size], ...]) -> Layout:
        """The layout of `key`, made once and kept among the LAYOUTS_KEPT most recently used."""
        found = self.layouts.pop(key, None) or _layout(key)
        self.layouts[key] = found
        while len(self.layouts) > LAYOUTS_KEPT:
            self.layouts.popitem(last=False)
        return found

    def layout(self, key: tuple[tuple[torch.dtype, torch.Size], ...]) -> Layout:
        """The layout of `key`, with its views into the staging buffer (grown to hold it)."""
        found = self.cached(key)
        if found.rows > self.buffer.shape[0]:
            for cached in self.layouts.values():  # their views would keep the old buffer alive
                cached.targets, cached.buffer = {}, None
            self.buffer = torch.zeros(found.rows, ROW, dtype=torch.int64, device=self.device)
            self.last = None
        if found.buffer is not self.buffer:
            data = self.buffer.view(-1).view(torch.uint8)
            found.targets = {
                dtype: [
                    data[found.starts[i] * ROW * 8 :][: nbytes_of(key[i])].view(dtype).view(key[i][1])
                    for i in positions
                ]
                for dtype, positions in found.groups.items()
            }
            found.buffer = self.buffer
        return found


@dataclass
class Launched:
    """One batch's per-row results, still on the device."""

    layout: Layout
    size: int
    result: torch.Tensor  # int64: the row sums, then the rows' max |x| as float64 bits (folded: per tensor)
    keep: object = None  # what must stay alive until `result` is read (the Triton path's pinned pointer table)
    folded: bool = False  # `result` holds one hash and one max |x| per tensor already (the Triton path)


_STAGERS: dict[torch.device, Stager] = {}
PATHS: Counter[str] = Counter()  # batches launched per path ("kernel", "staging"), for the benchmark to report


def launch(tensors: list[torch.Tensor]) -> Launched:
    """Queue the digests of `tensors` (all on one device): no host copy, no synchronisation."""
    device = tensors[0].device
    stager = _STAGERS.get(device) or _STAGERS.setdefault(device, Stager(device))
    if device.type == "cuda" and replay_triton.available():
        read = replay_triton.read(tensors)  # None: a tensor it cannot read (an odd byte size)
        if read is not None:
            key, ptrs, entries = read
            layout = stager.cached(key)  # no staging buffer: the kernel reads the tensors where they lie
            try:
                result, keep = replay_triton.digests(ptrs, entries, layout, device_tables(layout, device), device)
            except Exception as exc:  # a Triton that cannot build or launch here: the staging path, from now on
                replay_triton.give_up(exc)
            else:
                PATHS["kernel"] += 1
                return Launched(layout, len(tensors), result, keep, folded=True)
    PATHS["staging"] += 1
    entries = [t if t.dtype not in PLAIN and t.is_contiguous() else flat(t) for t in tensors]
    key = tuple((e.dtype, e.shape) for e in entries)
    layout = stager.layout(key)
    rows = stager.buffer[: layout.rows]
    with torch.no_grad():
        if stager.last is not layout:
            rows.zero_()  # another layout's data may sit in this one's padding
        for dtype, positions in layout.groups.items():
            torch._foreach_copy_(layout.targets[dtype], [entries[i] for i in positions])
        stager.last = layout
        sums = (rows * word_weights(device)).sum(1)
        runs = layout.float_runs
        if len(runs) == 1 and runs[0][1:] == (0, layout.rows):  # one float dtype (the usual case): no zeros needed
            magnitudes = _peaks(rows.view(runs[0][0])).to(torch.float64)
        else:
            magnitudes = torch.zeros(layout.rows, dtype=torch.float64, device=device)
            for dtype, start, stop in runs:
                magnitudes[start:stop] = _peaks(rows[start:stop].view(dtype))
        result = torch.cat([sums, magnitudes.view(torch.int64)])
    return Launched(layout, len(tensors), result)


def _peaks(region: torch.Tensor) -> torch.Tensor:
    """Each row's max |x|, NaN when the row holds one (one reduction on a GPU; abs + max is 5x faster on a CPU)."""
    region = region if region.dtype in FLOATS else region.float()
    if region.is_cpu:
        return region.abs().amax(1)
    peaks: torch.Tensor = torch.linalg.vector_norm(region, float("inf"), dim=1)
    return peaks


def resolve(batches: list[Launched]) -> list[tuple[int, float]]:
    """(bits hash, max |x|) of every tensor of `batches`, in order: one host copy per device."""
    hosts: dict[int, torch.Tensor] = {}
    by_device: dict[torch.device, list[int]] = {}
    for i, batch in enumerate(batches):
        by_device.setdefault(batch.result.device, []).append(i)
    for positions in by_device.values():
        results = [batches[i].result for i in positions]
        host = (torch.cat(results) if len(results) > 1 else results[0]).cpu()  # the one transfer
        offset = 0
        for i in positions:
            hosts[i] = host[offset : offset + batches[i].result.numel()]
            offset += batches[i].result.numel()
    out: list[tuple[int, float]] = []
    for i, batch in enumerate(batches):
        out += _fold(batch, hosts[i])
    return out


def _fold(batch: Launched, host: torch.Tensor) -> list[tuple[int, float]]:
    """Row results to one (hash, max |x|) per tensor; on the CPU, where int64 arithmetic wraps the same way."""
    if batch.folded:
        return list(zip(host[: batch.size].tolist(), host[batch.size :].view(torch.float64).tolist(), strict=True))
    layout, rows = batch.layout, batch.layout.rows
    sums, magnitudes = host[:rows], host[rows:].view(torch.float64)
    hashes = torch.zeros(batch.size, dtype=torch.int64).index_add_(0, layout.owner, sums * layout.row_weight)
    peaks = torch.zeros(batch.size, dtype=torch.float64).scatter_reduce_(0, layout.owner, magnitudes, "amax")
    return list(zip(hashes.tolist(), peaks.tolist(), strict=True))


def digest_all(tensors: list[torch.Tensor]) -> list[tuple[int, float]]:
    """Launch and resolve at once (tensors may sit on several devices)."""
    by_device: dict[torch.device, list[int]] = {}
    for i, tensor in enumerate(tensors):
        by_device.setdefault(tensor.device, []).append(i)
    batches = [launch([tensors[i] for i in positions]) for positions in by_device.values()]
    results = resolve(batches)
    out: list[tuple[int, float]] = [(0, 0.0)] * len(tensors)
    for position, value in zip([i for p in by_device.values() for i in p], results, strict=True):
        out[position] = value
    return out
