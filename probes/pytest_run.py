"""A user's pytest process as cuprobe runs it: its plugin merged into the test's own environment, and what the
plugin reports about each test."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from cuprobe import internal_env
from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.allocator import ENV as ALLOCATOR_ENV
from cuprobe.probes.allocator import NO_CACHING
from cuprobe.probes.base import Recorder

# The folder that holds the plugin and nothing else: added to the test's PYTHONPATH, after the test's own entries.
PLUGIN_DIR = Path(__file__).resolve().parent / "inject"
PLUGIN = "_cuprobe_pytest"
REPORT_ENV = internal_env.PYTEST_REPORT
CONFIRM_ENV = "CUPROBE_CONFIRM"
AUTOTUNE_CACHE_ENV = "TRITON_CACHE_AUTOTUNING"
EXTENSION_DIR_ENV = internal_env.EXTENSION_DIR
# What the probe process's PYTHONPATH starts with only so that it can import cuprobe (service/probing/secrets.py):
# taken off again before the user's command starts, so a test never sees cuprobe's import root.
ADDED_PYTHONPATH_ENV = internal_env.PYTHONPATH_ADDED


def runs_pytest(argv: list[str]) -> bool:
    """Whether `argv` starts pytest: `pytest ...`, `py.test ...` or `PYTHON -m pytest ...`."""
    if not argv:
        return False
    if PurePath(argv[0]).name in {"pytest", "py.test"}:
        return True
    return any(argv[i] == "-m" and argv[i + 1] == "pytest" for i in range(1, len(argv) - 1))


def without_added_path(env: dict[str, str]) -> dict[str, str]:
    """`env` with the PYTHONPATH entry cuprobe put first for its own process taken off (the variable removed when
    nothing else was in it)."""
    out = {k: v for k, v in env.items() if k != ADDED_PYTHONPATH_ENV}
    added = env.get(ADDED_PYTHONPATH_ENV)
    parts = out.get("PYTHONPATH", "").split(os.pathsep)
    if added and parts and parts[0] == added:
        rest = os.pathsep.join(parts[1:])
        if rest:
            out["PYTHONPATH"] = rest
        else:
            out.pop("PYTHONPATH", None)
    return out


def _joined(value: str | None, addition: str, separator: str) -> str:
    items = [item for item in (value or "").split(separator) if item]
    return separator.join(items if addition in items else [*items, addition])


def plugin_env(
    env: dict[str, str], allocator: str | None, report: Path, confirm: dict[str, object] | None = None
) -> dict[str, str]:
    """`env` (the test's own, as its entry and the user made it) with cuprobe's plugin merged in: its folder after
    the test's own PYTHONPATH, its name after the test's own PYTEST_PLUGINS, never replacing either. `confirm`: the
    plugin's watch for a confirmed run (probes/test_watch.py), where it replaces torch's allocator."""
    out = dict(env)
    if confirm is not None:
        out[CONFIRM_ENV] = json.dumps(confirm)
        out.pop(AUTOTUNE_CACHE_ENV, None)  # every run of the test autotunes afresh: the same allocations in each
    out["PYTHONPATH"] = _joined(env.get("PYTHONPATH"), str(PLUGIN_DIR), os.pathsep)
    out["PYTEST_PLUGINS"] = _joined(env.get("PYTEST_PLUGINS"), PLUGIN, ",")
    out[REPORT_ENV] = str(report)
    if allocator is not None:
        out[ALLOCATOR_ENV] = allocator
        if allocator == "no-caching":
            out[NO_CACHING] = "1"
        else:
            out.pop(NO_CACHING, None)
    if EXTENSION_DIR_ENV in os.environ:  # where the allocator extension is built once and kept
        out[EXTENSION_DIR_ENV] = os.environ[EXTENSION_DIR_ENV]
    return out


@dataclass(frozen=True)
class TestVerdict:
    """What pytest's reports say of one test: `passed`, `failed`, `not-run` (skipped, or an xfail whose body never
    ran) or `missing` (the process ended before reporting it), with pytest's message."""

    __test__ = False

    verdict: str
    message: str = ""
    seconds: float = 0.0


@dataclass
class PluginReport:
    """What the plugin wrote: whether it loaded, the allocator it set up, each test's phases, the session's exit."""

    loaded: bool
    allocator: dict[str, object] | None
    phases: dict[str, list[dict[str, str]]]
    exitstatus: int | None

    def verdict(self, nodeid: str) -> TestVerdict:
        phases = self.phases.get(nodeid, [])
        said = self._verdict(phases)
        seconds = sum(float(p.get("duration") or 0.0) for p in phases)
        return TestVerdict(said.verdict, said.message, round(seconds, 6))

    @staticmethod
    def _verdict(phases: list[dict[str, str]]) -> TestVerdict:
        failed = [p for p in phases if p.get("outcome") == "failed"]
        if failed:
            said = failed[0].get("crash") or _last_lines(failed[0].get("message", ""))
            return TestVerdict("failed", f"{failed[0].get('when')}: {said}")
        call = next((p for p in phases if p.get("when") == "call"), None)
        if call is None:
            skipped = next((p for p in phases if p.get("outcome") == "skipped"), None)
            if skipped is not None:
                why = skipped.get("xfail") or _last_lines(skipped.get("message", ""))
                return TestVerdict("not-run", f"pytest: skipped before the test body ran ({why})")
            return TestVerdict("missing", "the process ended before pytest reported this test")
        if call.get("outcome") == "skipped" and "xfail" not in call:
            return TestVerdict("not-run", f"pytest: skipped ({_last_lines(call.get('message', ''))})")
        return TestVerdict("passed")


def read_report(path: Path) -> PluginReport:
    """The plugin's report; a line cut short by a process that died mid-write is left out."""
    loaded, allocator, exitstatus = False, None, None
    phases: dict[str, list[dict[str, str]]] = {}
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "configure":
            loaded, allocator = True, event.get("allocator")
        elif kind == "phase":
            phases.setdefault(str(event.get("nodeid")), []).append(
                {k: str(v) for k, v in event.items() if k not in ("event", "nodeid")}
            )
        elif kind == "finish":
            exitstatus = int(event.get("exitstatus", -1))
    return PluginReport(loaded=loaded, allocator=allocator, phases=phases, exitstatus=exitstatus)


PLUGIN_ERROR = re.compile(r"(?:Error (?:importing|while loading) plugin|ImportError while loading)[^\n]*")


def plugin_failure(stderr: str, stdout: str, strict: bool = False) -> str:
    """Why the plugin did not load, as pytest said it (its import error naming the plugin); else, unless `strict`
    (then empty), a plain statement."""
    for text in (stderr, stdout):
        for found in PLUGIN_ERROR.finditer(text):
            if PLUGIN in text[max(0, found.start() - 200) : found.end() + 400]:
                raised = re.search(r"^E\s+(\w+(?:Error|Exception): .*)$", text[found.end() :], re.M)
                return (found.group(0).strip() + (f" {raised.group(1).strip()}" if raised else ""))[:400]
    return "" if strict else "pytest never called its pytest_configure hook"


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])[:500]


def confirm_spec(tool: Tool, recorder: Recorder, workdir: Path) -> dict[str, Any] | None:
    """What the plugin watches in this run, for the confirmation: in an initcheck run that will be confirmed, name
    every allocation (`log`); in a bare re-run, poison and keep what the flagged allocations' readers read and made.
    None where the run confirms nothing."""
    folder = str(workdir / "watch")
    plan = recorder.poison.plan
    if plan.fill is not None:
        watch: Any = "all" if plan.watch_all else plan.watch
        return {"mode": plan.mode, "dir": folder, "watch": watch}
    if tool is Tool.INITCHECK and recorder.confirming:
        return {"mode": "log", "dir": folder}
    return None


def watched(recorder: Recorder, cases: list[CaseResult], folder: Path) -> None:
    """What the plugin's watch saw, into the run's result: each allocation of a case as its buffer (so the sanitizer's
    addresses map to it), and in a re-run the snapshots and results the confirmation compares."""
    index_path = folder / "watch.json"
    if not index_path.is_file():
        raise RuntimeError("cuprobe's watch of the test's torch memory wrote nothing: the test process ended early")
    index = json.loads(index_path.read_text(encoding="utf-8"))
    if index.get("error"):
        if recorder.poison.active:
            raise RuntimeError(f"cuprobe could not watch the test's torch memory: {index['error']}")
        cases[0].observations["confirm_watch"] = f"not watched: {index['error']}"
        return
    by_id = {case.id: case for case in cases}
    only = cases[0] if len(cases) == 1 else None  # one process, one case: whatever pytest named its test
    reused_from = int(index.get("reused_from", -1))
    for entry in index.get("allocations", []):
        case = by_id.get(entry["test"]) or only
        if case is not None and not 0 <= reused_from <= entry["ordinal"]:
            recorder.allocation(case, entry["name"], entry["ptr"], entry["size"])
    for test, snaps in (index.get("snapshots") or {}).items():
        case = by_id.get(test) or only
        for name, kept in snaps.items():
            if case is not None:
                raw = (folder / kept["file"]).read_bytes()
                recorder.poison.checkpoint(case.id, kept["checkpoint"], **{name: _array(raw, "|u1", [len(raw)])})
    for test, outputs in (index.get("outputs") or {}).items():
        case = by_id.get(test) or only
        for name, kept in outputs.items():
            if case is not None:
                raw = (folder / kept["file"]).read_bytes()
                recorder.poison.output(case.id, name, _array(raw, kept["dtype"], kept["shape"]))
    if index.get("left_out"):
        cases[0].observations["confirm_left_out"] = index["left_out"]


def _array(raw: bytes, dtype: str, shape: list[int]) -> Callable[[], Any]:
    import numpy as np

    return lambda: np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)
