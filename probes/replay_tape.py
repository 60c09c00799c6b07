"""The recording side of replay: global hooks that digest every module output, gradient and parameter per step."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.hooks import RemovableHandle

from probes.replay_digest import describe, digest, magnitude

FORWARD, BACKWARD, UPDATE = "forward", "backward", "update"


def _tensors(value: Any, role: str) -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors in a module's output (a tensor, or tuples/lists/dicts of them), each with its role."""
    if isinstance(value, torch.Tensor):
        yield role, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _tensors(item, f"{role}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _tensors(item, f"{role}[{key}]")


class Tape:
    """Digests on the device as the program runs; one host copy per step, at its boundary."""

    def __init__(self, capture: int | None = None, capture_path: Path | None = None) -> None:
        self.step = 1
        self.records: list[dict[str, Any]] = []
        self._pending: list[tuple[dict[str, Any], torch.Tensor, torch.Tensor]] = []
        self._names: dict[int, str] = {}
        self._roots: list[nn.Module] = []
        self._depth = 0
        self._capture, self._capture_path = capture, capture_path
        self._handles: list[RemovableHandle] = []
        self.boundaries = 0

    # --- hooks -------------------------------------------------------------------------------------------
    def install(self) -> None:
        """Global module forward hooks and global optimizer step hooks: nothing in the user's code changes."""
        modules = torch.nn.modules.module
        self._handles += [
            modules.register_module_forward_pre_hook(self._enter),
            modules.register_module_forward_hook(self._leave),
            register_optimizer_step_pre_hook(self._before_update),
            register_optimizer_step_post_hook(self._after_update),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _enter(self, module: nn.Module, _inputs: Any) -> None:
        if self._depth == 0 and id(module) not in self._names:
            self._roots.append(module)
            self._name_roots()
        self._depth += 1

    def _leave(self, module: nn.Module, _inputs: Any, output: Any) -> None:
        self._depth = max(self._depth - 1, 0)
        path = self._name_of(module)
        for role, tensor in _tensors(output, "output"):
            self._record(FORWARD, path, role, tensor)
            if tensor.requires_grad:
                grad_role = "grad_" + role
                tensor.register_hook(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
                    lambda grad, p=path, r=grad_role: self._record(BACKWARD, p, r, grad)
                )

    def _before_update(self, optimizer: torch.optim.Optimizer, _args: Any, _kwargs: Any) -> None:
        for path, role, param in self._params(optimizer):
            if param.grad is not None:
                self._record(BACKWARD, path, role + ".grad", param.grad)

    def _after_update(self, optimizer: torch.optim.Optimizer, _args: Any, _kwargs: Any) -> None:
        for path, role, param in self._params(optimizer):
            self._record(UPDATE, path, role, param)
        self.boundary()

    def mark_step(self) -> None:
        """The user's step marker (no optimizer): digest the parameters and their gradients, then close the step."""
        params = [(path, role, p) for path, role, p in self._root_params() if p.requires_grad]
        for path, role, param in params:
            if param.grad is not None:
                self._record(BACKWARD, path, role + ".grad", param.grad)
        for path, role, param in params:
            self._record(UPDATE, path, role, param)
        self.boundary()

    # --- naming ------------------------------------------------------------------------------------------
    def _name_roots(self) -> None:
        for i, root in enumerate(self._roots):
            prefix = "" if i == 0 else type(root).__name__ + "."
            for name, module in root.named_modules():
                self._names.setdefault(id(module), prefix + name if name else type(root).__name__)

    def _name_of(self, module: nn.Module) -> str:
        if id(module) not in self._names:
            self._name_roots()  # a module attached after the first forward
        return self._names.get(id(module), f"<{type(module).__name__}>")

    def _root_params(self) -> list[tuple[str, str, torch.Tensor]]:
        out: list[tuple[str, str, torch.Tensor]] = []
        seen: set[int] = set()
        for root in self._roots:
            for module in root.modules():
                for leaf, param in module.named_parameters(recurse=False):
                    if id(param) not in seen:
                        seen.add(id(param))
                        out.append((self._name_of(module), leaf, param))
        return out

    def _params(self, optimizer: torch.optim.Optimizer) -> list[tuple[str, str, torch.Tensor]]:
        known = {id(p): (path, role) for path, role, p in self._root_params()}
        out = []
        for g, group in enumerate(optimizer.param_groups):
            for i, param in enumerate(group["params"]):
                path, role = known.get(id(param), ("<optimizer>", f"param_groups[{g}][{i}]"))
                out.append((path, role, param))
        return out

    # --- records -----------------------------------------------------------------------------------------
    def _record(self, phase: str, path: str, role: str, tensor: torch.Tensor) -> None:
        index = len(self.records) + len(self._pending)
        meta = {"index": index, "step": self.step, "phase": phase, "module": path, "role": role, **describe(tensor)}
        bits, mag = digest(tensor)
        self._pending.append((meta, bits, mag))
        if index == self._capture and self._capture_path is not None:
            torch.save(tensor.detach().to("cpu", copy=True), self._capture_path)

    def _flush(self) -> None:
        if not self._pending:
            return
        device = self._pending[-1][1].device
        bits = torch.stack([b.to(device) for _, b, _ in self._pending]).tolist()  # the step's one host copy
        ends = torch.stack([e.to(device) for _, _, e in self._pending]).tolist()
        for (meta, _, _), b, (low, high) in zip(self._pending, bits, ends, strict=True):
            self.records.append({**meta, "digest": b, "magnitude": magnitude(low, high)})
        self._pending = []

    def boundary(self) -> None:
        """Close the current step: copy its digests to the host; a boundary with nothing recorded is ignored."""
        if not self._pending:
            return
        self._flush()
        self.boundaries += 1
        self.step += 1

    def finish(self) -> int:
        """Flush what the program recorded after its last step boundary; returns how many records that was."""
        tail = len(self._pending)
        self._flush()
        return tail


def autotune_choices() -> list[dict[str, Any]]:
    """Every Triton autotuner this process used: kernel, per-key chosen config, and whether results persist."""
    import sys

    module = sys.modules.get("triton.runtime.autotuner")
    if module is None:
        return []
    tuners = [o for o in gc.get_objects() if isinstance(o, module.Autotuner)]
    out = []
    for tuner in tuners:
        fn = getattr(tuner, "fn", None)
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", repr(fn))
        cache = getattr(tuner, "cache", {}) or {}
        out.append(
            {
                "kernel": str(name),
                "choices": {repr(key): str(config) for key, config in cache.items()},
                "benchmarked": hasattr(tuner, "bench_time"),
                "cache_results": bool(getattr(tuner, "cache_results", False)),
            }
        )
    return sorted(out, key=lambda t: str(t["kernel"]))


# The tape of this process while replay runs it; `probes.replay.step()` marks a step boundary on it.
ACTIVE: Tape | None = None
