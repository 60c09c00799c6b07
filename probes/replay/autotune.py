"""Triton autotune choices of one replay process, recorded as each autotuner makes them.

`watch()` patches `triton.runtime.autotuner.Autotuner.run` when the program imports it (nothing is imported here):
after every call the autotuner's per-key choices are copied into this process's list, so an autotuner the program
creates per call and drops at once is still counted (a scan of live objects at exit would miss it).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

AUTOTUNER = "triton.runtime.autotuner"
_MARK = "_cuprobe_replay_entry"
_ENTRIES: list[dict[str, Any]] = []  # one per autotuner instance that ran, in the order they first ran


def watch() -> None:
    """Record every autotuner's choices from the moment Triton's autotuner module is (or was) imported."""
    module = sys.modules.get(AUTOTUNER)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def autotune_choices() -> list[dict[str, Any]]:
    """Per autotuner instance: kernel (`name#2` for a second instance of one kernel), per-key chosen config,
    whether it benchmarked in this process, and whether its results were to persist."""
    counts: dict[str, int] = {}
    out = []
    for entry in _ENTRIES:
        counts[entry["kernel"]] = counts.get(entry["kernel"], 0) + 1
        n = counts[entry["kernel"]]
        out.append({**entry, "kernel": entry["kernel"] if n == 1 else f"{entry['kernel']}#{n}"})
    return out


def _kernel_name(tuner: Any) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    for _ in range(8):  # heuristics and autotuners wrap the JIT function, which wraps the Python one
        name = getattr(fn, "__name__", None)
        if name:
            return str(name)
        fn = getattr(fn, "fn", None)
    return type(tuner).__name__


def _note(tuner: Any) -> None:
    entry = getattr(tuner, _MARK, None)
    if entry is None:
        entry = {"kernel": _kernel_name(tuner), "choices": {}, "benchmarked": False, "cache_results": False}
        setattr(tuner, _MARK, entry)
        _ENTRIES.append(entry)
    cache = getattr(tuner, "cache", None) or {}
    if len(cache) != len(entry["choices"]):
        entry["choices"] = {repr(key): str(config) for key, config in cache.items()}
    entry["benchmarked"] = hasattr(tuner, "bench_time")
    entry["cache_results"] = bool(getattr(tuner, "cache_results", False))


def _patch(module: ModuleType) -> None:
    cls = module.Autotuner
    if getattr(cls.run, _MARK, False):
        return
    original: Callable[..., Any] = cls.run

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            _note(self)

    setattr(run, _MARK, True)
    cls.run = run


class _Patching(importlib.abc.Loader):
    """Triton's own loader, then the patch."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.inner.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as Triton's loader has them
        return getattr(self.inner, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds Triton's autotuner module the usual way and wraps its loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != AUTOTUNER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: importlib.machinery.ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Patching(spec.loader)
                return spec
        return None
