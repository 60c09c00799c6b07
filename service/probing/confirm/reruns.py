"""The bare re-runs: a run's cases again without the sanitizer, fresh memory poisoned, in their own processes."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cuprobe.contract import ProbeResult, Tool
from cuprobe.probes import registry
from cuprobe.probes.warm import READY_NAME
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.confirm.decide import POISON_RUNS, BareRun, load_bare_run
from cuprobe.service.probing.confirm.policy import confirming, early_params
from cuprobe.service.probing.environment import PROJECT_ROOT
from cuprobe.service.probing.handover import FIFO_NAME, hand_over, move_artifacts
from cuprobe.service.probing.launch import read_probe_result
from cuprobe.service.probing.sandbox import job_environment, job_paths, sandbox_command
from cuprobe.service.probing.secrets import probe_environment
from cuprobe.service.sanitizer.command import probe_command
from cuprobe.service.sanitizer.supervise import Started, Supervised, supervise
from cuprobe.service.sanitizer.supervise import watch as watch_started

CONFIRM_DIR = "confirm"

LATE_DIR = "confirm-late"  # the re-runs of flagged cases the early ones left out (the cases that import torch)

# How much lower the re-runs' CPU priority is than the sanitizer runs' (nice): started beside them, four re-runs per
# sanitizer process would otherwise take the host's cores from the runs they confirm. No timing is read from a
# re-run; neither nice 19 nor SCHED_IDLE made a sweep faster than 10.
RERUN_NICE = 10

Watch = dict[str, list[str]] | None  # case id -> buffers to snapshot; None: every buffer (`--watch all`)


def rerun_command(
    probe: str,
    params: dict[str, object],
    out: Path,
    mode: str,
    watch: Watch,
    python: str | None,
    then: Sequence[tuple[str, Path]] = (),
) -> list[str]:
    """A bare re-run: the probe's cases and the confirmer's control, fresh memory poisoned with `mode`, snapshotting
    the buffers `watch` names (None: every buffer); `then`, (poison, result path) pairs: the re-runs that follow it
    in the same process, once it has completed."""
    cmd = probe_command(probe, params, out, Tool.NONE, python)
    cmd += ["--poison", mode, "--watch", "all" if watch is None else json.dumps(watch, sort_keys=True)]
    for then_mode, then_out in then:
        cmd += ["--then", f"{then_mode}={then_out}"]
    return [*cmd, "--confirm-control"]


def rerun_environment(settings: Settings) -> dict[str, str]:
    """A bare re-run's environment: the probe's allowlisted one."""
    return probe_environment(Tool.NONE, settings)


Run = tuple[str, str]  # a re-run: its label and poison (POISON_RUNS)


def dealt(runs: Sequence[Run], processes: int) -> list[list[Run]]:
    """`runs` dealt in turn into at most `processes` processes (Settings.confirm_processes), in their order within
    each: at 2, POISON_RUNS's two 0xFF runs land in different processes, so determinism is still checked across two."""
    count = max(1, min(processes, len(runs)))
    return [list(runs[i::count]) for i in range(count)]


def _why_not(done: Supervised, probe: ProbeResult | None, unreadable: str | None, limit: float) -> str | None:
    """Why a process's run gave no complete result (None: it ended well; `unreadable`: why its result.json could
    not be read, if so)."""
    if done.cancelled:
        return "cancelled"
    if done.timed_out:
        return f"timed out after {limit:g} s"
    if done.returncode != 0:
        said = (probe.unavailable or probe.error) if probe else None
        tail = [line for line in done.stderr.tail_text().splitlines() if line.strip()]
        return f"exited {done.returncode}: {said or (tail[-1] if tail else unreadable or 'no message')}"
    return None


def _bare_runs(
    request: ProbeRequest,
    params: dict[str, object],
    group: list[Run],
    watch: Watch,
    settings: Settings,
    workdir: Path,
    cancel: threading.Event,
    folder: str = CONFIRM_DIR,
    warm: WarmPool | None = None,
    sandboxed: bool = False,
) -> list[BareRun]:
    """The re-runs of `group`, one after another in one bare process, each writing its result in its own folder;
    `sandboxed`: in the sandbox the run had (a job's own code: service/probing/sandbox.py)."""
    outs = [workdir / folder / label.replace("#", "-") / "result.json" for label, _ in group]
    for out in outs:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
    then = [(mode, out) for (_, mode), out in zip(group[1:], outs[1:], strict=True)]
    cmd = rerun_command(request.probe, params, outs[0], group[0][1], watch, settings.python, then)
    limit = (request.timeout_s or settings.timeout_s) * len(group)
    done = None
    if warm is not None and watch is None and not then:  # only the early re-runs, which watch every buffer, are warm
        done = _warm_run(warm, request.probe, group[0][1], params, limit, cancel, outs[0])
    if done is None and cancel.is_set():  # stopped before it began: start nothing
        cancelled = zip(group, outs, strict=True)
        return [load_bare_run(label, mode, None, "cancelled", out) for (label, mode), out in cancelled]
    env = rerun_environment(settings)
    if sandboxed:
        cmd = sandbox_command(cmd, workdir, settings, os.environ.get("HOME"), job_paths(params))
        env = job_environment(env, workdir)
    if done is None:
        done = supervise(
            cmd,
            timeout_s=limit,
            max_output_bytes=settings.max_output_bytes,
            env=env,
            cwd=PROJECT_ROOT,
            cancel=cancel,
            nice=RERUN_NICE,
        )
    runs: list[BareRun] = []
    for (label, mode), out in zip(group, outs, strict=True):
        (out.parent / "stdout.txt").write_text(done.stdout.text())  # the process's, in each of its re-runs' folders
        (out.parent / "stderr.txt").write_text(done.stderr.text())
        probe, unreadable = read_probe_result(out)
        why = _why_not(done, probe, unreadable, limit)
        before = next((run for run in runs if not run.ok), None)
        if before is not None and probe is None:
            why = f"not run: {before.label}, before it in its process, did not complete ({before.message})"
        run = load_bare_run(label, mode, probe, why or unreadable, out, done.duration_s)
        run.warm = done.warm
        runs.append(run)
    return runs


@dataclass
class WarmRerun:
    """A started bare re-run of `probe` under poison `mode`, waiting for its parameters in its own folder."""

    probe: str
    mode: str
    folder: Path
    started: Started

    @property
    def fifo(self) -> Path:
        return self.folder / FIFO_NAME

    def alive(self) -> bool:
        return self.started.proc.poll() is None

    def ready(self) -> bool:
        return (self.folder / READY_NAME).exists()

    def discard(self) -> None:
        self.started.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class WarmPool(Protocol):
    """Warm re-runs a caller keeps ready (warm.RerunPool): one taken runs instead of a cold start."""

    @property
    def after_s(self) -> float:
        """How long a taken re-run waits before it gets its parameters."""

    def take(self, probe: str, mode: str) -> WarmRerun | None: ...


def _warm_run(
    pool: WarmPool,
    probe: str,
    mode: str,
    params: dict[str, object],
    limit: float,
    cancel: threading.Event,
    out: Path,
) -> Supervised | None:
    """The re-run in a warm process of the pool, its files moved to where the cold one writes them; None where the
    pool holds none for it, or the one it held died before taking its parameters (the re-run then starts cold)."""
    warm = pool.take(probe, mode)
    if warm is None:
        return None
    if (pool.after_s > 0 and cancel.wait(pool.after_s)) or cancel.is_set():
        warm.discard()
        return None
    since = time.monotonic()
    if not hand_over(warm.fifo, warm.alive, json.dumps(params, sort_keys=True), cancel.is_set):
        warm.discard()
        return None
    done = watch_started(warm.started, since=since, timeout_s=limit, cancel=cancel)
    move_artifacts(warm.folder, out.parent)
    shutil.rmtree(warm.folder, ignore_errors=True)
    done.warm = True
    return done


class Reruns:
    """Bare re-runs of a run's cases with poisoned memory, in Settings.confirm_processes processes running side by
    side in their own threads (each process dies with the thread that started it). They are independent bare
    processes and no timing is read from them, so their wall time is the slowest one's (mostly interpreter and
    library start-up).

    Started `early` (beside the sanitizer run, before its findings are known: docs/confirmation.md), the sentinel
    run snapshots every buffer (`watch=None`); started late, only the flagged ones."""

    def __init__(
        self,
        request: ProbeRequest,
        params: dict[str, object],
        watch: Watch,
        settings: Settings,
        workdir: Path,
        runs: tuple[Run, ...] = POISON_RUNS,
        folder: str = CONFIRM_DIR,
        warm: WarmPool | None = None,
        sandboxed: bool = False,
    ) -> None:
        self.started = time.monotonic()
        self.shared_by = 1  # how many runs decide their findings from these (a sweep's batches: confirm/shared.py)
        self.where = ""  # where the runs that share them are, for the message ("": this process)
        self._ends: list[float] = []  # each process's end (list.append: safe from the pool's threads)
        self._cancel = threading.Event()
        self._labels = [label for label, _ in runs]
        # A caller's ready pool holds one process per poison: its re-runs stay one a process.
        groups = dealt(runs, len(runs) if warm is not None else settings.confirm_processes)
        self._pool = ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="confirm")
        self._pending = [
            self._pool.submit(
                self._timed, request, params, group, watch, settings, workdir, self._cancel, folder, warm, sandboxed
            )
            for group in groups
        ]

    def _timed(self, *args: Any) -> list[BareRun]:
        runs = _bare_runs(*args)
        self._ends.append(time.monotonic())
        return runs

    def results(self) -> dict[str, BareRun]:
        """Every re-run, once all have ended, in the order they were asked for."""
        try:
            ran = {run.label: run for future in self._pending for run in future.result()}
            return {label: ran[label] for label in self._labels}
        finally:
            self._pool.shutdown(wait=True)

    @property
    def spent_s(self) -> float:
        """From the first start to the last end."""
        return round(max(0.0, max(self._ends, default=self.started) - self.started), 3)

    def close(self) -> None:
        """Stop whatever still runs (a run with nothing to confirm) and wait for the threads."""
        self._cancel.set()
        self._pool.shutdown(wait=True)


class EarlyReruns(Protocol):
    """Re-runs started before the run's findings are known: its own (Reruns), or a set it shares with a sweep's other
    batches in this process (confirm/shared.py) or its other jobs on this host (confirm/host.py)."""

    @property
    def shared_by(self) -> int: ...

    @property
    def where(self) -> str: ...

    @property
    def spent_s(self) -> float: ...

    def results(self) -> dict[str, BareRun]: ...

    def close(self) -> None: ...


def start_early(
    request: ProbeRequest, tool: Tool, params: dict[str, object], settings: Settings, workdir: Path
) -> Reruns | None:
    """The re-runs started beside the sanitizer run, where this run confirms and its probe allows (Probe.reruns_early):
    they do not depend on what the sanitizer finds, and a run without findings ends them (docs/confirmation.md)."""
    if not confirming(request, tool, settings):
        return None
    if not registry.get(request.probe).reruns_early:
        return None
    return Reruns(request, early_params(request.probe, params), None, settings, workdir)
