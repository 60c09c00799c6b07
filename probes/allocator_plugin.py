"""pytest plugin: `CUPROBE_ALLOCATOR=caching-nvtx pytest -p probes.allocator_plugin`: torch's allocator, any suite.

No change to the tests: the plugin sets the allocator up before a test touches CUDA (pytest_configure),
says in the report header which one is in use (and why, when caching-nvtx fell back to no-caching),
and prints the NVTX registration counts at the end. Run it under `compute-sanitizer --nvtx yes`.
"""

from __future__ import annotations

import os

import pytest

from cuprobe.contract import Tool
from cuprobe.probes.allocator import (
    ENV,
    AllocatorState,
    activate,
    current,
    fall_back,
    final_context,
    parse_allocator,
    prepare,
)

STATE_KEY = pytest.StashKey[AllocatorState]()


def pytest_configure(config: pytest.Config) -> None:
    value = os.environ.get(ENV, "").strip()
    if not value:
        return
    try:
        choice = parse_allocator(value)
    except ValueError as exc:
        raise pytest.UsageError(f"{ENV}: {exc}") from exc
    state = prepare(choice, Tool.NONE)
    if choice == "caching-nvtx":
        import torch

        if torch.cuda.is_available():
            activate(state, torch)
        else:
            fall_back(state, "torch sees no CUDA device")
    config.stash[STATE_KEY] = state


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    why = f" ({state.fallback})" if state.fallback else ""
    return f"cuprobe allocator: {state.effective}, asked for {state.requested}{why}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    state = current()
    if state is None or state.loaded is None:
        return
    import torch

    counts = final_context(state, torch).get("allocator_nvtx_counts", {})
    terminalreporter.write_line(
        "cuprobe allocator NVTX registrations: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    )
