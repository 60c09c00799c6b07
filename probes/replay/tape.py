"""The recording side of replay: global hooks that digest every module output, gradient and parameter per step."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.hooks import RemovableHandle

from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay.digest import digest, dtype_name

FORWARD, BACKWARD, UPDATE = "forward", "backward", "update"
BATCH_BYTES = 128 << 20  # tensors held before their digests are launched (a tensor larger than this: alone)
RECENT = 4  # tensors remembered for the next records: a module's output is often its parent's output too


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


# A record while its step is open: [phase, module path, role, shape, dtype, digest, max |x|, late]. Dicts are made
# only when `records` is read (after the program), so the hooks stay cheap on a launch-bound step.
PHASE, PATH, ROLE, SHAPE, DTYPE, DIGEST, MAGNITUDE, LATE = range(8)
OUTPUT_GRADS = ("retain", "hooks", "none")
UNCHECKED = -1  # the version of a held tensor that nothing can change before its batch is launched


class Group:
    """One phase's optimizer tensors in one step (its parameters, or their gradients), all on one device, held and
    digested as one entry: their names come from the optimizer's cached plan, so a step adds one object, not a row
    per tensor. The tensors are let go when the step closes; their shapes and dtypes are kept."""

    __slots__ = ("late", "metas", "names", "phase", "tensors", "values", "versions")

    def __init__(self, phase: str, names: list[tuple[str, str]], tensors: list[torch.Tensor],
                 versions: list[int] | None) -> None:
        self.phase, self.names, self.tensors, self.versions = phase, names, tensors, versions
        self.metas: list[tuple[torch.Size, torch.dtype]] = []
        self.values: list[tuple[int, float]] | None = None  # (digest, max |x|) per tensor, once resolved
        self.late: set[int] = set()  # positions the program changed in place before their batch was launched

    def release(self) -> None:
        if self.tensors:
            self.metas = [(t.shape, t.dtype) for t in self.tensors]
            self.tensors = []

    def rows(self) -> Iterator[list[Any]]:
        values = self.values or [(0, 0.0)] * len(self.metas)
        for i, ((path, role), (shape, dtype), (bits, peak)) in enumerate(
            zip(self.names, self.metas, values, strict=True)
        ):
            yield [self.phase, path, role, shape, dtype, bits, peak, i in self.late]


class Plan:
    """An optimizer's parameters in its order, with their records' names: cached until its parameter lists change."""

    __slots__ = ("grad_names", "key", "names", "params")

    def __init__(self, key: tuple[tuple[int, int], ...], params: list[torch.Tensor],
                 names: list[tuple[str, str]]) -> None:
        self.key, self.params, self.names = key, params, names
        self.grad_names = [(path, role + ".grad") for path, role in names]


def _rows(items: list[list[Any] | Group]) -> Iterator[list[Any]]:
    for item in items:
        if isinstance(item, Group):
            yield from item.rows()
        else:
            yield item


class Tape:
    """Records every tensor of a step; digests CPU tensors at once and others in batches, one host copy per step.

    A tensor on an accelerator is held until its batch is launched: when the held tensors reach `batch_bytes`,
    before the optimizer updates the parameters, and at the step boundary. A tensor the program changed in place
    before its batch was launched is digested as it was then and its record marked `late`; its (phase, module,
    role) is digested at once in later steps. `batch_cpu` batches CPU tensors too (the same digests; slower on a
    CPU, where a kernel launch costs nothing to save). `digests=False` records without digesting (every digest 0):
    what the hooks alone cost, for the benchmark.

    The gradients of module outputs, by `output_grads`: `none` (the default) records none of them: the backward
    phase is then seen only through the parameters' gradients (the cheapest; a divergence born in backward is named
    by the first parameter gradient it reaches, not by the module output where it began). `retain` asks autograd to
    keep them (`retain_grad`, no Python runs during the backward pass) and records them at the optimizer step, the
    latest output first — the order in which autograd computes them; each step's output gradients are then held
    until that point, and those cuprobe asked for are released (`.grad = None`) once recorded. `hooks` records each as
    autograd computes it, through a Python hook per output (memory bounded by `batch_bytes`; slower on a
    launch-bound step, where a hook's cost adds straight to the step's time).
    """

    def __init__(self, capture: int | None = None, capture_path: Path | None = None,
                 batch_bytes: int = BATCH_BYTES, batch_cpu: bool = False, digests: bool = True,
                 output_grads: str = "none") -> None:
        if output_grads not in OUTPUT_GRADS:
            raise ValueError(f"output_grads must be one of {', '.join(OUTPUT_GRADS)}, not {output_grads!r}")
        self._retain = output_grads == "retain"
        self._output_grads = output_grads != "none"
        # outputs whose gradient autograd keeps for us: (tensor, its names, whether cuprobe asked for it)
        self._retained: list[tuple[torch.Tensor, list[tuple[str, str]], bool]] = []
        self.step = 1
        self._count = 0  # records so far, the open step's included
        self._done: list[tuple[int, list[list[Any] | Group]]] = []  # closed steps not yet made into dicts
        self._records: list[dict[str, Any]] = []
        self._open: list[list[Any] | Group] = []  # this step's records, in program order
        self._held: list[tuple[list[Any], torch.Tensor, int] | Group] = []  # (record, tensor, version) or a group
        self._held_bytes = 0
        self._launched: list[tuple[list[list[Any] | Group], replay_batch.Launched]] = []
        self._at_once: set[tuple[str, str, str]] = set()
        self._recent: list[tuple[torch.Tensor, int, list[Any]]] = []  # (tensor, version, its record)
        self._hooked: list[tuple[torch.Tensor, list[tuple[str, str]]]] = []  # outputs whose gradient is hooked
        self._grads_checked = True  # False once an optimizer changed a gradient in place: launch before updates
        self._copies: list[tuple[list[Any], list[Any]]] = []  # (record, the record it repeats)
        self._batch_bytes, self._batch_cpu, self._digests = batch_bytes, batch_cpu, digests
        self._names: dict[int, str] = {}
        self._plans: dict[int, Plan] = {}  # per optimizer
        self._roots: list[nn.Module] = []
        self._depth = 0
        self._updating = 0  # optimizer steps entered and not yet left
        self._capture, self._capture_path = capture, capture_path
        self._handles: list[RemovableHandle] = []
        self.boundaries = 0

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every closed step's records, as dicts (index, step, phase, module, role, shape, dtype, digest,
        magnitude and, where it applies, late)."""
        for step, items in self._done:
            for row in _rows(items):
                record = {"index": len(self._records), "step": step, "phase": row[PHASE], "module": row[PATH],
                          "role": row[ROLE], "shape": list(row[SHAPE]), "dtype": dtype_name(row[DTYPE]),
                          "digest": row[DIGEST], "magnitude": row[MAGNITUDE]}
                if row[LATE]:
                    record["late"] = True
                self._records.append(record)
        self._done = []
        return self._records

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
        if self._depth:
            self._depth -= 1
        path = self._names.get(id(module)) or self._name_of(module)
        outputs = (("output", output),) if isinstance(output, torch.Tensor) else _tensors(output, "output")
        for role, tensor in outputs:
            self._record(FORWARD, path, role, tensor)
            if tensor.requires_grad and self._output_grads:
                self._on_grad(tensor, path, "grad_" + role)

    def _on_grad(self, tensor: torch.Tensor, path: str, role: str) -> None:
        """Record the gradient of a module's output; a tensor that is several modules' output (a container's, its
        last child's) gets one hook that records it under each name."""
        for seen, names in self._hooked:
            if seen is tensor:
                names.append((path, role))
                return
        names = [(path, role)]
        self._hooked.append((tensor, names))
        if len(self._hooked) > RECENT:
            del self._hooked[0]
        if self._retain:
            ours = not tensor.retains_grad
            tensor.retain_grad()
            self._retained.append((tensor, names, ours))
            return
        tensor.register_hook(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
            lambda grad: self._record_grads(names, grad)
        )

    def _take_grads(self) -> None:
        """Record the output gradients autograd kept, the latest output first; release those cuprobe asked for."""
        retained, self._retained = self._retained, []
        for tensor, names, ours in reversed(retained):
            grad = tensor.grad
            if grad is not None:
                self._record_grads(names, grad)
                if ours:
                    tensor.grad = None

    def _record_grads(self, names: list[tuple[str, str]], grad: torch.Tensor) -> None:
        for path, role in names:
            self._record(BACKWARD, path, role, grad)  # the second and later: copies of the first

    def _before_update(self, optimizer: torch.optim.Optimizer, _args: Any, _kwargs: Any) -> None:
        # An optimizer whose step calls its base class's step fires the hooks once per level: the outermost counts.
        self._updating += 1
        if self._updating > 1:
            return
        self._take_grads()
        plan = self._plan(optimizer)
        grads = [p.grad for p in plan.params]
        names = plan.grad_names
        if any(g is None for g in grads):
            names = [name for name, g in zip(names, grads, strict=True) if g is not None]
            grads = [g for g in grads if g is not None]
        # Launched with the step's other records, a gradient changed by then is `late`; once that happened, they
        # are launched before every update.
        self._record_all(BACKWARD, names, grads, checked=self._grads_checked)  # type: ignore[arg-type]
        if not self._grads_checked:
            self._launch()

    def _after_update(self, optimizer: torch.optim.Optimizer, _args: Any, _kwargs: Any) -> None:
        self._updating = max(self._updating - 1, 0)
        if self._updating:
            return
        plan = self._plan(optimizer)
        self._record_all(UPDATE, plan.names, plan.params)
        self.boundary()

    def mark_step(self) -> None:
        """The user's step marker (no optimizer): digest the parameters and their gradients, then close the step."""
        self._take_grads()
        params = [(path, role, p) for path, role, p in self._root_params() if p.requires_grad]
        grads = [((path, role + ".grad"), p.grad) for path, role, p in params if p.grad is not None]
        self._record_all(BACKWARD, [name for name, _ in grads], [g for _, g in grads])
        self._record_all(UPDATE, [(path, role) for path, role, _ in params], [p for _, _, p in params])
        self.boundary()

    # --- naming ------------------------------------------------------------------------------------------
    def _name_roots(self) -> None:
        self._plans = {}
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

    def _plan(self, optimizer: torch.optim.Optimizer) -> Plan:
        """The optimizer's parameters in its order and their records' names; cached until its parameter lists
        change."""
        key = tuple((id(group["params"]), len(group["params"])) for group in optimizer.param_groups)
        cached = self._plans.get(id(optimizer))
        if cached is not None and cached.key == key:
            return cached
        known = {id(p): (path, role) for path, role, p in self._root_params()}
        params, names = [], []
        for g, group in enumerate(optimizer.param_groups):
            for i, param in enumerate(group["params"]):
                params.append(param)
                names.append(known.get(id(param), ("<optimizer>", f"param_groups[{g}][{i}]")))
        plan = self._plans[id(optimizer)] = Plan(key, params, names)
        return plan

    # --- records -----------------------------------------------------------------------------------------
    def _record(self, phase: str, path: str, role: str, tensor: torch.Tensor) -> None:
        index = self._count
        self._count = index + 1
        row = [phase, path, role, tensor.shape, tensor.dtype, 0, 0.0, False]
        self._open.append(row)
        if index == self._capture and self._capture_path is not None:
            torch.save(tensor.detach().to("cpu", copy=True), self._capture_path)
        version = tensor._version
        recent = self._recent
        for seen, seen_version, earlier in recent:
            if seen is tensor and seen_version == version:  # unchanged since recorded: one digest serves both
                self._copies.append((row, earlier))
                return
        recent.append((tensor, version, row))
        if len(recent) > RECENT:
            del recent[0]
        if tensor.is_cpu and not self._batch_cpu:
            if self._digests:
                row[DIGEST], row[MAGNITUDE] = digest(tensor)  # no launches to save on the CPU
            return
        self._held.append((row, tensor, version))
        self._held_bytes += tensor.nbytes
        if self._held_bytes >= self._batch_bytes or (self._at_once and (phase, path, role) in self._at_once):
            self._launch()

    def _record_all(self, phase: str, names: list[tuple[str, str]], tensors: list[torch.Tensor],
                    checked: bool = False) -> None:
        """Records of the optimizer's tensors, as one group: digested once each (no repeats to look for);
        `checked`: their batch may be launched after the program could change them (a change marks them `late`)."""
        if not tensors:
            return
        first = self._count
        capture = self._capture
        at_once = not self._batch_cpu and any(t.is_cpu for t in tensors)
        one_device = len({t.device for t in tensors}) == 1
        if at_once or not one_device or (capture is not None and first <= capture < first + len(tensors)):
            # CPU digests at once, a model across devices (one batch per device), the capture: a row each
            for (path, role), tensor in zip(names, tensors, strict=True):
                self._record(phase, path, role, tensor)
            return
        group = Group(phase, names, tensors, [t._version for t in tensors] if checked else None)
        self._count = first + len(tensors)
        self._open.append(group)
        self._held.append(group)
        self._held_bytes += sum(t.nbytes for t in tensors)
        if self._held_bytes >= self._batch_bytes:
            self._launch()

    def _launch(self) -> None:
        """Queue the digests of the held tensors, per device; they are no longer held."""
        if not self._held:
            return
        by_device: dict[torch.device, tuple[list[list[Any] | Group], list[torch.Tensor]]] = {}
        for item in self._held:
            if isinstance(item, Group):
                self._check_group(item)
                items, tensors = by_device.setdefault(item.tensors[0].device, ([], []))
                items.append(item)
                tensors += item.tensors
                continue
            row, tensor, version = item
            if version != UNCHECKED and tensor._version != version:  # changed in place since it was recorded
                self._mark_late(row)
            items, tensors = by_device.setdefault(tensor.device, ([], []))
            items.append(row)
            tensors.append(tensor)
        if self._digests:
            for items, tensors in by_device.values():
                self._launched.append((items, replay_batch.launch(tensors)))
        self._held, self._held_bytes = [], 0

    def _mark_late(self, row: list[Any]) -> None:
        row[LATE] = True
        if row[PHASE] == BACKWARD and row[ROLE].endswith(".grad"):
            self._grads_checked = False  # the optimizer changes gradients: digest them before it runs
        else:
            self._at_once.add((row[PHASE], row[PATH], row[ROLE]))

    def _check_group(self, group: Group) -> None:
        if group.versions is None:
            return
        now = [t._version for t in group.tensors]
        if now != group.versions:
            group.late.update(i for i, (a, b) in enumerate(zip(now, group.versions, strict=True)) if a != b)
            if group.phase == BACKWARD:
                self._grads_checked = False
            else:
                self._at_once.update((group.phase, *group.names[i]) for i in group.late)

    def _flush(self) -> None:
        """Every record of the step gets its digest: the step's one host copy (per device)."""
        self._launch()
        if self._launched:
            values = replay_batch.resolve([batch for _, batch in self._launched])
            at = 0
            for items, _ in self._launched:
                for item in items:
                    if isinstance(item, Group):
                        n = len(item.tensors)
                        item.values, at = values[at : at + n], at + n
                    else:
                        item[DIGEST], item[MAGNITUDE] = values[at]
                        at += 1
            self._launched = []
        for item in self._open:
            if isinstance(item, Group):
                item.release()
        for row, same in self._copies:
            row[DIGEST], row[MAGNITUDE], row[LATE] = same[DIGEST], same[MAGNITUDE], same[LATE]
        self._done.append((self.step, self._open))
        self._open, self._copies, self._recent, self._hooked = [], [], [], []

    def boundary(self) -> None:
        """Close the current step: copy its digests to the host; a boundary with nothing recorded is ignored."""
        if not self._open:
            return
        self._flush()
        self.boundaries += 1
        self.step += 1

    def finish(self) -> int:
        """Flush what the program recorded after its last step boundary; returns how many records that was."""
        self._take_grads()
        tail = sum(len(item.tensors) if isinstance(item, Group) else 1 for item in self._open)
        self._flush()
        return tail


# The tape of this process while replay runs it; `cuprobe.probes.replay.step()` marks a step boundary on it.
ACTIVE: Tape | None = None
