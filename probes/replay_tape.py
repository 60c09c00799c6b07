"""The recording side of replay: global hooks that digest every module output, gradient and parameter per step."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.hooks import RemovableHandle

from probes import replay_batch
from probes.replay_digest import describe, digest

FORWARD, BACKWARD, UPDATE = "forward", "backward", "update"
BATCH_BYTES = 128 << 20  # tensors held before their digests are launched (a tensor larger than this: alone)
RECENT = 8  # tensors remembered for the next records: a module's output is often its parent's output too


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
    """Records every tensor of a step; digests CPU tensors at once and others in batches, one host copy per step.

    A tensor on an accelerator is held (detached) until its batch is launched: when the held tensors reach
    `batch_bytes`, before the optimizer updates the parameters, and at the step boundary. A tensor the program
    changed in place before its batch was launched is digested as it was then and its record marked `late`; its
    (phase, module, role) is digested at once in later steps. `batch_cpu` batches CPU tensors too (the same
    digests; slower on a CPU, where a kernel launch costs nothing to save).
    """

    def __init__(self, capture: int | None = None, capture_path: Path | None = None,
                 batch_bytes: int = BATCH_BYTES, batch_cpu: bool = False) -> None:
        self.step = 1
        self.records: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []  # this step's records, in program order
        self._held: list[tuple[dict[str, Any], torch.Tensor, int]] = []  # (record, tensor, version when recorded)
        self._held_bytes = 0
        self._launched: list[tuple[list[dict[str, Any]], replay_batch.Launched]] = []
        self._at_once: set[tuple[str, str, str]] = set()
        self._recent: list[tuple[torch.Tensor, int, dict[str, Any]]] = []  # (tensor, version, its record)
        self._copies: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (record, the record it repeats)
        self._batch_bytes, self._batch_cpu = batch_bytes, batch_cpu
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
        self._launch()  # before the optimizer changes anything in place

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
        index = len(self.records) + len(self._open)
        record = {"index": index, "step": self.step, "phase": phase, "module": path, "role": role,
                  **describe(tensor)}
        self._open.append(record)
        if index == self._capture and self._capture_path is not None:
            torch.save(tensor.detach().to("cpu", copy=True), self._capture_path)
        version = tensor._version
        same = next((r for t, v, r in self._recent if t is tensor and v == version), None)
        self._recent = [*self._recent[1 - RECENT :], (tensor, version, record)]
        if same is not None:  # unchanged since it was recorded: one digest serves both records
            self._copies.append((record, same))
            return
        if tensor.device.type == "cpu" and not self._batch_cpu:
            record["digest"], record["magnitude"] = digest(tensor)  # no launches to save on the CPU
            return
        held = tensor.detach()
        self._held.append((record, held, held._version))
        self._held_bytes += held.numel() * held.element_size()
        if self._held_bytes >= self._batch_bytes or (phase, path, role) in self._at_once:
            self._launch()

    def _launch(self) -> None:
        """Queue the digests of the held tensors, per device; they are no longer held."""
        by_device: dict[torch.device, list[tuple[dict[str, Any], torch.Tensor, int]]] = {}
        for item in self._held:
            by_device.setdefault(item[1].device, []).append(item)
        for items in by_device.values():
            for record, tensor, version in items:
                if tensor._version != version:  # changed in place since it was recorded
                    record["late"] = True
                    self._at_once.add((record["phase"], record["module"], record["role"]))
            batch = replay_batch.launch([tensor for _, tensor, _ in items])
            self._launched.append(([record for record, _, _ in items], batch))
        self._held, self._held_bytes = [], 0

    def _flush(self) -> None:
        """Every record of the step gets its digest: the step's one host copy (per device)."""
        self._launch()
        if self._launched:
            values = replay_batch.resolve([batch for _, batch in self._launched])
            records = [record for group, _ in self._launched for record in group]
            for record, (bits, peak) in zip(records, values, strict=True):
                record["digest"], record["magnitude"] = bits, peak
            self._launched = []
        for record, same in self._copies:
            record.update({k: same[k] for k in ("digest", "magnitude", "late") if k in same})
        self.records += self._open
        self._open, self._copies, self._recent = [], [], []

    def boundary(self) -> None:
        """Close the current step: copy its digests to the host; a boundary with nothing recorded is ignored."""
        if not self._open:
            return
        self._flush()
        self.boundaries += 1
        self.step += 1

    def finish(self) -> int:
        """Flush what the program recorded after its last step boundary; returns how many records that was."""
        tail = len(self._open)
        self._flush()
        return tail


# The tape of this process while replay runs it; `probes.replay.step()` marks a step boundary on it.
ACTIVE: Tape | None = None
