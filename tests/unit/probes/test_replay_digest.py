"""replay's digests: the batched path equals the per-tensor one, and a single flipped bit or a swap changes them.

Every test runs on the CPU; on a machine with CUDA the batched path runs on the GPU too.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import torch

from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay.digest import ROW, bits_hash, digest, max_abs, weight, words
from cuprobe.probes.replay.tape import Tape

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
MASK = (1 << 64) - 1


def reference_hash(tensor: torch.Tensor) -> int:
    """The documented function in plain Python integers: weighted word sums per row, weighted row sums, mod 2**64."""
    values = words(tensor).cpu().tolist()
    total = 0
    for r in range(0, len(values), ROW):
        row = sum(weight(1, j) * w for j, w in enumerate(values[r : r + ROW]))
        total += weight(2, r // ROW) * row
    total &= MASK
    return total - (1 << 64) if total >> 63 else total


def assorted(device: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    made = [
        torch.randn(3000, generator=gen),  # 1500 words: two rows, the second partial
        torch.randn(5, 7, generator=gen).bfloat16(),  # 70 bytes: a partial last word
        torch.tensor(3.5),  # a 0-d loss
        torch.zeros(0),
        torch.randn(4, 4, generator=gen)[:, 1],  # not contiguous
        torch.randn(9, generator=gen)[1:],  # a view that starts mid-word
        torch.tensor([True, False, True]),
        torch.randn(3, dtype=torch.complex64, generator=gen),
        torch.arange(2000, dtype=torch.int64) * (1 << 40),
        torch.tensor([float("nan"), 1.0, -2.0]),
        torch.tensor([float("-inf"), 1.0]).half(),
        torch.randn(ROW * 2 + 5, generator=gen).double() * 1e300,  # past float32's range: still finite
        torch.randn(2, 3, generator=gen).half(),
    ]
    return [t.to(device) for t in made]


def same(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))


def test_the_per_tensor_digest_is_the_documented_function() -> None:
    for tensor in assorted("cpu"):
        assert bits_hash(tensor) == reference_hash(tensor), tensor.dtype


@pytest.mark.parametrize("device", DEVICES)
def test_a_batch_gives_every_tensor_its_per_tensor_digest(device: str) -> None:
    tensors = assorted(device)
    batched = replay_batch.digest_all(tensors)
    for tensor, got in zip(tensors, batched, strict=True):
        assert same(got, digest(tensor.cpu())), (tensor.dtype, tuple(tensor.shape), got)
    magnitudes = [m for _, m in batched]
    assert math.isnan(magnitudes[9]) and magnitudes[10] == math.inf and magnitudes[11] > 1e300
    assert magnitudes[3] == 0.0 and magnitudes[8] == 0.0  # empty and integer tensors
    assert batched[3][0] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_a_batch_launched_twice_with_another_between_gives_the_same_digests(device: str) -> None:
    first, other = assorted(device), [torch.ones(50, device=device), torch.full((3,), 7.0, device=device)]
    expected = replay_batch.digest_all(first)
    replay_batch.digest_all(other)  # another layout's data now sits in the staging buffer
    again = replay_batch.resolve([replay_batch.launch(first)])
    assert all(same(a, b) for a, b in zip(again, expected, strict=True))


@pytest.mark.parametrize("device", DEVICES)
def test_every_single_flipped_bit_changes_the_digest(device: str) -> None:
    gen = torch.Generator().manual_seed(3)
    base = torch.randn(ROW * 4 + 3, generator=gen)  # 4.5 rows of words
    raw = base.view(torch.int32)
    positions = [0, 1, 2 * ROW - 1, 2 * ROW, 2 * ROW + 1, raw.numel() - 1]  # row ends, both halves of a word, last
    flipped = []
    for position in positions:
        for bit in range(32):
            copy = raw.clone()
            copy[position] ^= torch.tensor(1 << bit if bit < 31 else -(1 << 31), dtype=torch.int32)
            flipped.append(copy.view(torch.float32))
    tensors = [base.to(device)] + [t.to(device) for t in flipped]
    digests = [bits for bits, _ in replay_batch.digest_all(tensors)]
    assert all(d != digests[0] for d in digests[1:])
    assert [bits_hash(t) for t in flipped[:40]] == digests[1:41]


@pytest.mark.parametrize("device", DEVICES)
def test_swapped_elements_change_the_digest(device: str) -> None:
    # A sum of the bits (the former digest) cannot see these: the same values, at other positions.
    rng = random.Random(5)
    base = torch.randn(ROW * 6, generator=torch.Generator().manual_seed(5))
    swaps = []
    for _ in range(64):
        i, j = rng.sample(range(base.numel()), 2)
        copy = base.clone()
        copy[i], copy[j] = base[j], base[i]
        swaps.append(copy)
    adjacent = base.clone()
    adjacent[0], adjacent[1] = base[1], base[0]  # the two halves of one word
    mask = torch.zeros(ROW * 4)
    mask[::3] = 1.0
    rolled = mask.roll(1)  # round values, many positions: the bits differ only in the exponent
    tensors = [t.to(device) for t in [base, adjacent, mask, rolled, *swaps]]
    digests = [bits for bits, _ in replay_batch.digest_all(tensors)]
    assert digests[0] != digests[1] and digests[2] != digests[3]
    assert all(d != digests[0] for d in digests[4:])


def test_max_abs_is_nan_when_any_element_is_nan_and_exact_for_float64() -> None:
    assert math.isnan(max_abs(torch.tensor([1.0, float("nan")])))
    assert max_abs(torch.tensor([-3e300, 1.0], dtype=torch.float64)) == 3e300
    assert max_abs(torch.tensor([-2.5, 1.0]).bfloat16()) == 2.5


def _overflowing_net() -> tuple[Any, Any]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    return net, torch.optim.SGD(net.parameters(), lr=1e3)  # diverges: huge, then inf, then NaN


def _records(tape: Tape, steps: int = 6) -> list[dict[str, Any]]:
    net, optimizer = _overflowing_net()
    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
    tape.install()
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            (net(x) ** 2).mean().backward()  # type: ignore[no-untyped-call]
            optimizer.step()
    finally:
        tape.remove()
    tape.finish()
    return tape.records


def _comparable(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["index"], r["module"], r["role"], r["digest"], "nan" if math.isnan(r["magnitude"]) else r["magnitude"])
        for r in records
    ]


@pytest.mark.parametrize("batch_bytes", [1 << 30, 4096])
def test_a_batched_tape_records_what_the_per_tensor_tape_records(batch_bytes: int) -> None:
    eager = _records(Tape(output_grads="retain"))  # every kind of record, module output gradients included
    batched = _records(Tape(batch_cpu=True, batch_bytes=batch_bytes, output_grads="retain"))
    assert _comparable(batched) == _comparable(eager)
    magnitudes = [r["magnitude"] for r in eager]
    assert any(math.isinf(m) for m in magnitudes) or any(math.isnan(m) for m in magnitudes)  # the watch has work
    assert not any(r.get("late") for r in batched)


def test_output_grads_none_keeps_every_other_record_and_drops_only_module_output_gradients() -> None:
    full, lean = _records(Tape(output_grads="retain")), _records(Tape())  # `none` is the default
    kept = [r for r in full if not r["role"].startswith("grad_")]
    assert len(kept) < len(full)  # the full tape had module output gradients to drop
    assert not any(r["role"].startswith("grad_") for r in lean)
    key = ("step", "phase", "module", "role", "digest")
    assert [tuple(r[k] for k in key) for r in lean] == [tuple(r[k] for k in key) for r in kept]
    assert any(r["role"] == "weight.grad" for r in lean)  # backward is still seen through parameter gradients


class AddsInPlace(torch.nn.Module):
    """Returns its input plus one, and then adds 100 to its previous output in place (after it was recorded)."""

    def __init__(self) -> None:
        super().__init__()
        self.last: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.last is not None:
            self.last.add_(100.0)
        self.last = x + 1.0
        return self.last


def test_a_tensor_changed_in_place_before_its_batch_is_marked_late_then_digested_at_once() -> None:
    module, x = AddsInPlace(), torch.arange(4.0)
    tape = Tape(batch_cpu=True)
    tape.install()
    try:
        for _ in range(3):
            with torch.no_grad():
                module(x)
                module(x)
            tape.mark_step()
    finally:
        tape.remove()
    tape.finish()
    outputs = [r for r in tape.records if r["phase"] == "forward"]
    assert [bool(r.get("late")) for r in outputs] == [True, False, False, False, False, False]
    fresh = digest(x + 1.0)[0]
    assert outputs[0]["digest"] != fresh  # step 1: digested after the in-place change, and said so
    assert [r["digest"] for r in outputs[1:]] == [fresh] * 5  # later steps: digested when recorded


def _trained(tape: Tape, net: torch.nn.Module, make: Any, steps: int) -> list[dict[str, Any]]:
    """`steps` steps of `net` on a seeded input of 8 x 4, `make(net)` its optimizer, with `tape` installed; its
    records."""
    optimizer = make(net)
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    tape.install()
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            net(x).sum().backward()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
            optimizer.step()
    finally:
        tape.remove()
    tape.finish()
    return tape.records


class HalvesGradients(torch.optim.SGD):
    """SGD that halves every gradient in place before its update, as gradient-rescaling optimizers do."""

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.mul_(0.5)
        return super().step(closure)


def test_gradients_an_optimizer_changes_in_place_are_late_once_then_digested_before_every_update() -> None:
    # torch wraps a class's step with the hooks when its first instance is made: made here, SGD's step fires them
    # again inside HalvesGradients's (nested), which must count as one update.
    torch.optim.SGD([torch.zeros(1, requires_grad=True)])

    def run(tape: Tape) -> list[dict[str, Any]]:
        torch.manual_seed(0)
        records = _trained(tape, torch.nn.Linear(4, 2), lambda net: HalvesGradients(net.parameters(), lr=0.1), 3)
        return [r for r in records if r["role"].endswith(".grad")]

    eager, batched = run(Tape()), run(Tape(batch_cpu=True))
    assert [r["step"] for r in batched] == [1, 1, 2, 2, 3, 3]
    assert [bool(r.get("late")) for r in batched] == [True, True, False, False, False, False]
    assert [r["digest"] for r in batched[2:]] == [r["digest"] for r in eager[2:]]  # as the backward left them
    assert all(b["digest"] != e["digest"] for b, e in zip(batched[:2], eager[:2], strict=True))


class WithUnused(torch.nn.Module):
    """A linear layer and a parameter the forward never uses: it has no gradient, and is still a parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.used = torch.nn.Linear(4, 2)
        self.spare = torch.nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.used(x)
        return out


def test_a_parameter_without_a_gradient_is_recorded_as_a_parameter_and_not_as_a_gradient() -> None:
    def run(tape: Tape) -> list[dict[str, Any]]:
        torch.manual_seed(0)
        return _trained(tape, WithUnused(), lambda net: torch.optim.SGD(net.parameters(), lr=0.1), 2)

    eager, batched = run(Tape()), run(Tape(batch_cpu=True))
    assert _comparable(batched) == _comparable(eager)
    step1 = [(r["phase"], r["module"], r["role"]) for r in batched if r["step"] == 1]
    assert ("update", "WithUnused", "spare") in step1 and ("backward", "WithUnused", "spare.grad") not in step1
    assert ("backward", "used", "weight.grad") in step1 and ("backward", "used", "bias.grad") in step1
    assert [r["index"] for r in batched] == list(range(len(batched)))
    assert [r["shape"] for r in batched if r["role"] == "spare"] == [[3], [3]]
