"""What cuprobe watches inside a user's torch test process while its initcheck findings are confirmed.

cuprobe's pytest plugin loads this file by path into the test's own interpreter: the standard library and torch only.
With CUPROBE_CONFIRM set, torch's CUDA allocator is replaced by kernels/poison_alloc.c (every block fresh, never
cached; freed blocks quarantined up to a budget, so no address names two blocks; fresh blocks filled with the run's
poison) and every aten op goes through a TorchDispatchMode:

- each allocation gets a name that another process of the same test gives it again: the op that made it, the line of
  the test's own code that called that op, and its count among the allocations of that op and line in that test
  (`aten.empty.memory_format@tests/test_x.py:12#0`);
- the first op that reads an allocation (a tensor argument the op's schema does not write) is its reader: in the
  sentinel run a watched allocation is copied out just before its reader runs;
- in the 0xFF and zero runs, everything an op reading a watched allocation produced is kept, to be compared.

It sees what goes through torch's dispatcher: a Triton kernel or a custom CUDA extension launched directly is not an
aten op, so memory only such a kernel reads has no reader here and its findings stay unconfirmed, saying so.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

CONFIRM_ENV = "CUPROBE_CONFIRM"
FILLS = {"log": -1, "ff": 0xFF, "zero": 0x00, "sentinel": 0xA5}
MALLOC, FREE = "cuprobe_poison_malloc", "cuprobe_poison_free"
MAX_KEPT_BYTES = 256 << 20  # snapshots and outputs one run keeps, in all
QUARANTINE_MAX = 8 << 30  # freed bytes kept from reuse (and at most a quarter of the GPU's free memory)
# Frames of these packages are not the test's own code: a call site is the innermost frame outside them.
NOT_THE_TEST = ("torch", "triton", "_pytest", "pytest", "pluggy", "_cuprobe_pytest", "_cuprobe_test_watch")
NUMPY_DTYPES = {
    "torch.float64": "<f8", "torch.float32": "<f4", "torch.float16": "<f2", "torch.int64": "<i8",
    "torch.int32": "<i4", "torch.int16": "<i2", "torch.int8": "|i1", "torch.uint8": "|u1",
}


class Watch:
    """One test process's watch: its allocator library, the allocations it named, what it kept."""

    def __init__(self, spec: dict[str, Any], library: Path) -> None:
        self.mode = str(spec.get("mode", "log"))
        self.dir = Path(spec["dir"])
        watch = spec.get("watch") or {}
        self.watch_all = watch == "all"
        self.watched = {} if self.watch_all else {test: set(names) for test, names in watch.items()}
        self.library = library
        self.lib = ctypes.CDLL(str(library))
        self.lib.cuprobe_log_count.restype = ctypes.c_ulonglong
        self.lib.cuprobe_log_reused_from.restype = ctypes.c_ulonglong
        self.test = ""
        self.named: list[dict[str, Any]] = []
        self.by_ptr: dict[int, dict[str, Any]] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.snapshots: dict[str, dict[str, dict[str, Any]]] = {}
        self.outputs: dict[str, dict[str, dict[str, Any]]] = {}
        self.kept_bytes = 0
        self.left_out = 0
        self.files = 0

    def install(self, torch: Any) -> None:
        """torch's allocator replaced (before its first CUDA allocation), the poison and the log set."""
        self.lib.cuprobe_set_poison(FILLS[self.mode])
        free, _ = torch.cuda.mem_get_info()
        self.lib.cuprobe_log_start(ctypes.c_ulonglong(min(QUARANTINE_MAX, free // 4)))
        allocator = torch.cuda.memory.CUDAPluggableAllocator(str(self.library), MALLOC, FREE)
        torch.cuda.memory.change_current_allocator(allocator)

    def watching(self, entry: dict[str, Any]) -> bool:
        return self.watch_all or entry["name"] in self.watched.get(entry["test"], ())

    def name_new(self, first: int, op: str, where: str) -> None:
        """Name the allocations made since ordinal `first`, during `op` called at `where`."""
        ptr, size, stream = ctypes.c_ulonglong(), ctypes.c_ulonglong(), ctypes.c_ulonglong()
        for ordinal in range(first, int(self.lib.cuprobe_log_count())):
            got = self.lib.cuprobe_log_entry(
                ctypes.c_ulonglong(ordinal), ctypes.byref(ptr), ctypes.byref(size), ctypes.byref(stream)
            )
            if got != 0:
                continue
            key = (self.test, f"{op}@{where}")
            count = self.counts.get(key, 0)
            self.counts[key] = count + 1
            entry = {"test": self.test, "name": f"{key[1]}#{count}", "ptr": ptr.value, "size": size.value,
                     "ordinal": ordinal}
            self.named.append(entry)
            self.by_ptr[ptr.value] = entry

    def keep(self, raw: bytes, **about: Any) -> dict[str, Any] | None:
        """Write `raw` to a file of its own (None, counted, past MAX_KEPT_BYTES)."""
        if self.kept_bytes + len(raw) > MAX_KEPT_BYTES:
            self.left_out += 1
            return None
        self.kept_bytes += len(raw)
        self.files += 1
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / f"{self.files}.bin").write_bytes(raw)
        return {"file": f"{self.files}.bin", **about}

    def write(self, error: str | None = None) -> None:
        """The watch's index, watch.json, beside the files it kept."""
        index = {
            "mode": self.mode,
            "allocations": self.named,
            "reused_from": int(self.lib.cuprobe_log_reused_from()),
            "snapshots": self.snapshots,
            "outputs": self.outputs,
            "left_out": self.left_out,
            "error": error,
        }
        write_index(self.dir, index)


def write_index(folder: Path, index: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "watch.json").write_text(json.dumps(index), encoding="utf-8")


def site() -> str:
    """file:line of the innermost frame of the test's own code (outside torch, Triton, pytest and cuprobe)."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] not in NOT_THE_TEST:
            return f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "-"


def _host_bytes(torch: Any, cpu: Any) -> bytes:
    return ctypes.string_at(cpu.data_ptr(), cpu.numel() * cpu.element_size()) if cpu.numel() else b""


def block_bytes(torch: Any, tensor: Any) -> bytes:
    """Every byte of the allocation holding `tensor`, as it is now (no CUDA memory allocated to read it)."""
    whole = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())
    return _host_bytes(torch, whole.cpu())


def values(torch: Any, tensor: Any) -> tuple[bytes, str, list[int]]:
    """A result's values as bytes, their numpy dtype and shape: bf16 widened to float32 (exactly), on the host."""
    cpu = tensor.detach().cpu()
    if cpu.dtype == torch.bool:
        cpu = cpu.to(torch.uint8)
    elif cpu.is_complex():
        cpu = torch.view_as_real(cpu)
    dtype = NUMPY_DTYPES.get(str(cpu.dtype))
    if dtype is None:
        cpu, dtype = cpu.to(torch.float32), "<f4"
    cpu = cpu.contiguous()
    return _host_bytes(torch, cpu), dtype, list(cpu.shape)


def reads(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], flatten: Any, torch: Any) -> list[Any]:
    """The tensors `func` reads: its tensor arguments that its schema does not mark as written."""
    out = []
    for i, argument in enumerate(func._schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(argument.name)
        if value is None or (argument.alias_info is not None and argument.alias_info.is_write):
            continue
        out += [t for t in flatten(value)[0] if isinstance(t, torch.Tensor)]
    return out


def dispatch_mode(watch: Watch, torch: Any) -> Any:
    """A TorchDispatchMode that names allocations, finds each watched one's reader and keeps what it needs."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    seen: set[int] = set()  # allocations whose reader ran
    done: dict[tuple[str, str], int] = {}  # how many times each reading op and output came round

    class Watching(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            first = int(watch.lib.cuprobe_log_count())
            where = site()
            readers = []
            for tensor in reads(func, args, kwargs, tree_flatten, torch):
                if tensor.device.type != "cuda":
                    continue
                entry = watch.by_ptr.get(tensor.untyped_storage().data_ptr())
                if entry is None or not watch.watching(entry):
                    continue
                readers.append(entry)
                if entry["ordinal"] in seen:
                    continue
                seen.add(entry["ordinal"])
                if watch.mode == "sentinel":
                    kept = watch.keep(block_bytes(torch, tensor), checkpoint=f"before {func} at {where}")
                    if kept is not None:
                        watch.snapshots.setdefault(entry["test"], {})[entry["name"]] = kept
            result = func(*args, **kwargs)
            watch.name_new(first, str(func), where)
            if readers and watch.mode in ("ff", "zero"):
                produced = [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
                for n, tensor in enumerate(produced):
                    raw, dtype, shape = values(torch, tensor)
                    for entry in readers:
                        op = (entry["test"], f"{entry['name']} -> {func}@{where}#{n}")
                        done[op] = done.get(op, -1) + 1
                        name = f"{op[1]} ({done[op]})"
                        kept = watch.keep(raw, dtype=dtype, shape=shape)
                        if kept is not None:
                            watch.outputs.setdefault(entry["test"], {})[name] = kept
            return result

    return Watching()  # type: ignore[no-untyped-call]
