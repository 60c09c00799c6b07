"""cuprobe's pytest plugin, loaded into a user's test process by name (`-p _cuprobe_pytest`, PYTEST_PLUGINS) from a
folder that holds nothing else.

It runs in the user's interpreter, which has none of cuprobe's dependencies: it uses the standard library, pytest,
and torch only where the tests import it; cuprobe's own pieces (probes/allocator_state.py, kernels/extension.py) are
loaded by path under names no project uses. What it does:

- with CUPROBE_ALLOCATOR set, sets torch's CUDA allocator up before a test touches CUDA (caching-nvtx registers
  torch's caching allocator with the sanitizer through NVTX, or falls back to no-caching, saying why);
- with CUPROBE_PYTEST_REPORT set, writes one JSON line per event to that file as it happens: that it loaded, each
  test's phases and outcomes, and the session's end, so a process that dies mid-file leaves what ran before;
- with CUPROBE_CONFIRM set (a run whose initcheck findings are confirmed), replaces torch's allocator with cuprobe's
  logging and poisoning one and watches torch's ops (probes/test_watch.py) instead of setting CUPROBE_ALLOCATOR's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ALLOCATOR_ENV = "CUPROBE_ALLOCATOR"
REPORT_ENV = "CUPROBE_PYTEST_REPORT"
HERE = Path(__file__).resolve().parent
SOURCES = {
    "_cuprobe_allocator_state": HERE.parent / "allocator_state.py",
    "_cuprobe_extension": HERE.parent.parent / "kernels" / "extension.py",
    "_cuprobe_test_watch": HERE.parent / "test_watch.py",
    "_cuprobe_poison_alloc": HERE.parent.parent / "kernels" / "poison_alloc.py",
}
CONFIRM_ENV = "CUPROBE_CONFIRM"
_watching: dict[str, Any] = {}  # the watch of a confirming run and its dispatch mode, while the session runs
ALLOCATORS = ("caching-nvtx", "caching", "no-caching")
MESSAGE_CHARS = 2000


def _load(name: str) -> ModuleType:
    """One of cuprobe's standard-library modules, by path, under a private name."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SOURCES[name])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {SOURCES[name]}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _write(event: dict[str, Any]) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(event) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(CONFIRM_ENV):
        _write({"event": "configure", "python": sys.executable, "allocator": {"allocator": "cuprobe-confirm"},
                "confirm": _watch(json.loads(os.environ[CONFIRM_ENV]))})
        return
    choice = os.environ.get(ALLOCATOR_ENV, "").strip()
    state = _set_up(choice) if choice else None
    _write({"event": "configure", "python": sys.executable, "allocator": state.context() if state else None})


def _watch(spec: dict[str, Any]) -> str | None:
    """Start watching torch in this process for the confirmation; the reason where it cannot (also in watch.json)."""
    watching = _load("_cuprobe_test_watch")
    folder = Path(spec["dir"])
    try:
        if importlib.util.find_spec("torch") is None:
            raise RuntimeError("torch is not installed in the test's interpreter")
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        library = _load("_cuprobe_poison_alloc").build()
        watch = watching.Watch(spec, library)
        watch.install(torch)
        torch.backends.cudnn.benchmark = False  # the same algorithms, and so allocations, in every run
        mode = watching.dispatch_mode(watch, torch)
        mode.__enter__()
    except Exception as exc:  # the reason is the confirmation's; the tests still run
        reason = f"{type(exc).__name__}: {exc}"
        watching.write_index(folder, {"mode": spec.get("mode"), "error": reason})
        return reason
    _watching.update(watch=watch, mode=mode)
    return None


def _set_up(choice: str) -> Any:
    """torch's allocator as `choice` asks, before a test touches CUDA; caching-nvtx falls back, saying why."""
    if choice not in ALLOCATORS:
        raise pytest.UsageError(f"{ALLOCATOR_ENV} must be one of {', '.join(ALLOCATORS)} (got {choice!r})")
    allocator = _load("_cuprobe_allocator_state")
    state = allocator.prepare(choice)
    if state.effective != "caching-nvtx":
        return state
    if importlib.util.find_spec("torch") is None:
        allocator.fall_back(state, "torch is not installed in the test's interpreter")
        return state
    import torch

    if not torch.cuda.is_available():
        allocator.fall_back(state, "torch sees no CUDA device")
        return state
    extension = _load("_cuprobe_extension")
    allocator.activate(state, torch, extension.load, extension.ExtensionUnavailable)
    return state


def pytest_report_header(config: pytest.Config) -> str | None:
    state = _state()
    if state is None:
        return None
    why = f" ({state.fallback})" if state.fallback else ""
    return f"cuprobe allocator: {state.effective}, asked for {state.requested}{why}"


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if "watch" in _watching:
        _watching["watch"].test = nodeid
    _write({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    event: dict[str, Any] = {
        "event": "phase",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": round(float(report.duration), 6),
    }
    if hasattr(report, "wasxfail"):
        event["xfail"] = str(report.wasxfail)
    if report.outcome != "passed":
        skipped = report.longrepr if isinstance(report.longrepr, tuple) else None  # (path, line, "Skipped: why")
        event["message"] = str(skipped[2] if skipped else report.longreprtext)[-MESSAGE_CHARS:]
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:  # where it failed and pytest's one-line reason (`assert 4 == 5`)
            event["crash"] = f"{crash.path}:{crash.lineno}: {crash.message}"[:MESSAGE_CHARS]
    _write(event)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if "watch" in _watching:
        _watching["mode"].__exit__(None, None, None)
        _watching.pop("watch").write()
    _write({"event": "finish", "exitstatus": int(exitstatus)})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    state = _state()
    if state is None or state.loaded is None:
        return
    import torch

    counts = _load("_cuprobe_allocator_state").final_context(state, torch).get("allocator_nvtx_counts", {})
    terminalreporter.write_line(
        "cuprobe allocator NVTX registrations: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    )


def _state() -> Any:
    module = sys.modules.get("_cuprobe_allocator_state")
    return module.current() if module is not None else None
