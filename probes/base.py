"""The Probe base class and the recorder a probe writes its cases into."""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from cuprobe.contract import Allocation, CaseResult, Expectation, ProbeResult, Tool
from cuprobe.probes.poison import PoisonLog, PoisonPlan


class ProbeUnavailable(RuntimeError):
    """The probe cannot run here (no CUDA device, a missing package); the message says how to get it."""


class ProbeRefused(ValueError):
    """The probe refuses this tool or these parameters before doing any work (exit EXIT_BAD_PARAMS)."""


class Recorder:
    """Collects the cases of one probe run and writes result.json atomically."""

    def __init__(self, probe: str, tool: Tool, params: BaseModel, poison: PoisonPlan | None = None) -> None:
        self.result = ProbeResult(probe=probe, tool=tool, params=params.model_dump(mode="json"))
        # The confirmer's bare re-runs: fresh allocations poisoned, results and watched buffers kept.
        self.poison = PoisonLog(poison)
        # Where a probe may leave extra artifacts (plots) beside result.json; None when it has nowhere to.
        self.artifacts_dir: Path | None = None
        # The progress file the runner watches (HEARTBEAT_ENV), for probes that beat once per case (Probe.beats).
        self.heartbeat: Path | None = None
        # Whether this run's initcheck findings will be confirmed (the runner asked for the confirmer's control).
        self.confirming = False
        # The case still open and when it began: a case's `seconds` run until the next case begins or the result is
        # written, so they hold what the sanitizer did for the case's launches as well as the probe's own work.
        self._open: tuple[CaseResult, float] | None = None
        self._started = time.monotonic()

    def beat(self, what: str) -> None:
        """Tell the runner's watchdog this run made progress: `what` started (one small write, overwritten)."""
        if self.heartbeat is None:
            return
        try:
            self.heartbeat.write_text(f"{len(self.result.cases)} {what}\n", encoding="utf-8")
        except OSError:
            self.heartbeat = None  # nowhere to write: the watchdog stays off, the time limit still holds

    def case(self, case_id: str, expectation: Expectation, **params: Any) -> CaseResult:
        case = CaseResult(id=case_id, params=params, expectation=expectation)
        now = self.close_case()
        if not self.result.cases:
            self.result.context["before_first_case_s"] = round(now - self._started, 4)
        self._open = (case, now)
        self.result.cases.append(case)
        self.beat(f"case {case_id}")
        return case

    @staticmethod
    def allocation(case: CaseResult, name: str, start: int, size: int) -> None:
        case.allocations.append(Allocation(name=name, start=int(start), size=int(size)))

    def close_case(self) -> float:
        """Give the open case its wall seconds (`seconds`, an observation), up to now."""
        now = time.monotonic()
        if self._open is not None:
            case, began = self._open
            case.observations["seconds"] = round(now - began, 4)
            self._open = None
        return now

    def write(self, path: Path) -> None:
        self.close_case()
        if self.poison.active:
            self.result.context["poison"] = self.poison.write(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.result.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, path)


P = TypeVar("P", bound=BaseModel)


class Probe(ABC, Generic[P]):
    """A probe program: declares params (its model P), tools, expectations; runs inside the sanitizer."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Params: type[P]  # a class attribute in every probe; ClassVar cannot hold a type variable
    tools: ClassVar[tuple[Tool, ...]]  # the first is the default tool
    # Whether a bare run needs a GPU whatever its parameters; probes with CPU and CUDA backends say False
    # here and decide per request in gpu_needed().
    needs_gpu: ClassVar[bool] = True
    # Whether the probe poisons its fresh allocations when asked (`--poison`): the confirmer can then re-run it.
    poisonable: ClassVar[bool] = False
    unpoisonable_reason: ClassVar[str] = "this probe does not poison its allocations, so its reads cannot be re-run"
    # Timing and autotuning probes: a sanitizer distorts timing, so they refuse every tool but `none`.
    bare_only: ClassVar[bool] = False
    # Probes whose cases are each short (seconds, not minutes): they beat per case, so the runner may stop and
    # retry a run that stops making progress (a stalled sanitizer process) long before its time limit. Probes that
    # run the user's code or one long case leave it False: only their time limit applies.
    beats: ClassVar[bool] = False
    # Probes that run their cases in their own process (not the user's program): the runner may hand a run to a
    # spare process that got ready before its parameters were known (probes/warm.py, service/probing/spares.py).
    warms: ClassVar[bool] = False
    # Probes that run the user's own program (command): bare, that program decides whether it needs a GPU, so a run
    # here without one goes ahead (CPU tests run bare on any machine); a service job still goes to a GPU queue.
    runs_users_program: ClassVar[bool] = False
    # Whether the confirmation's bare re-runs may start beside the sanitizer run, before its findings are known.
    # Probes that run the user's program say False: running it four more times for every clean run costs too much.
    reruns_early: ClassVar[bool] = True

    def poison_refusal(self, params: P) -> str | None:
        """Why this probe cannot poison its memory with these parameters (so its findings are not re-run), or None."""
        return None if self.poisonable else self.unpoisonable_reason

    def gpu_needed(self, params: P) -> bool:
        """Whether a bare run with these parameters needs a GPU (probes with CPU and CUDA backends override)."""
        return self.needs_gpu

    def uses_torch(self, params: P) -> bool:
        """Whether these parameters import torch (its probes run initcheck with device-only backtraces)."""
        return False

    def narrowed(self, params: P, cases: set[str]) -> P | None:
        """These parameters cut down to fewer cases that still include `cases` (case ids of a run with `params`),
        or None where the probe cannot say (the confirmation then re-runs every case: docs/confirmation.md)."""
        return None

    def without_torch(self, params: P) -> P | None:
        """These parameters less their cases that import torch, or None where the probe cannot split them, or where
        nothing would be left out or nothing left (the confirmation's early re-runs then run every case)."""
        return None

    def merged(self, params: list[P]) -> P | None:
        """One set of these parameters whose cases include every case of each of `params` (a sweep's batches of
        one grid), or None where the probe cannot say (each batch's confirmation then re-runs its own cases). Here:
        equal parameters (a sweep's repeats of one process) merge to themselves."""
        return params[0] if params and all(p == params[0] for p in params) else None

    def refusal(self, params: P, tool: Tool) -> str | None:
        """Why this probe will not run these parameters under `tool`, or None; checked before it starts."""
        if self.bare_only and tool is not Tool.NONE:
            return (
                f"probe {self.name} runs bare only (--tool none), not under {tool}: "
                "a sanitizer distorts timing and autotuning, so its results would be meaningless"
            )
        return None

    def expectation(self, params: P, tool: Tool) -> Expectation:
        """What every case of this probe expects under `tool`; clean unless overridden."""
        return Expectation()

    @abstractmethod
    def run(self, params: P, tool: Tool, recorder: Recorder) -> None:
        """Run every case, recording observations and allocations into `recorder`."""
