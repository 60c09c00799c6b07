"""selftest: a torch-free CPU probe that behaves as told (ok, hang, crash...) to test the plumbing."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import Tool
from cuprobe.probes.base import Probe, ProbeUnavailable, Recorder

Behaviour = Literal["ok", "sleep", "hang", "kill", "segv", "raise", "exit0-no-sentinel", "violate", "stall-once"]
# `stall-once`: the first run in a folder hangs after its case started (leaving this file there), the next completes.
STALLED_MARK = "selftest-stalled-once"


class SelftestParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    behaviour: Behaviour = Field("ok", description="what the probe does")
    seconds: float = Field(0.0, ge=0, le=3600, description="how long `sleep` sleeps")
    cuda_init: bool = Field(
        False,
        description="initialise CUDA first (so a sanitizer sees a CUDA program); unavailable without a CUDA device",
    )


class Selftest(Probe[SelftestParams]):
    name = "selftest"
    summary = "Plumbing test: completes, sleeps, hangs, dies by a signal, raises or skips its sentinel"
    Params = SelftestParams
    tools = (Tool.NONE, Tool.MEMCHECK, Tool.INITCHECK, Tool.RACECHECK, Tool.SYNCCHECK)
    beats = True  # short cases: the runner's watchdog may stop and retry a run that stops making progress
    warms = True  # its cases run in its own process: a spare can get ready before its parameters come
    needs_gpu = False

    def run(self, params: SelftestParams, tool: Tool, recorder: Recorder) -> None:
        case = recorder.case(params.behaviour, self.expectation(params, tool), behaviour=params.behaviour)
        case.observations["pid"] = os.getpid()
        if params.cuda_init:
            from cuprobe.probes.gpu import cuda_device_count

            case.observations["cuda_devices"] = cuda_device_count()
            if not case.observations["cuda_devices"]:  # asked to be a CUDA program and could not be: not clean
                raise ProbeUnavailable("selftest cuda_init: no CUDA device or driver here, so CUDA was not initialised")
        if params.behaviour == "sleep":
            time.sleep(params.seconds)
        elif params.behaviour == "hang" or (params.behaviour == "stall-once" and _first_in(recorder)):
            while True:
                time.sleep(1)
        elif params.behaviour == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif params.behaviour == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif params.behaviour == "raise":
            raise RuntimeError("selftest: raised on request")
        elif params.behaviour == "exit0-no-sentinel":
            sys.stdout.flush()
            os._exit(0)
        elif params.behaviour == "violate":
            case.violations.append("selftest: expectation violated on request")


def _first_in(recorder: Recorder) -> bool:
    """Whether this is the first `stall-once` run in the run's folder (it leaves STALLED_MARK there)."""
    mark = (recorder.artifacts_dir or Path.cwd()) / STALLED_MARK
    if mark.exists():
        return False
    mark.write_text(f"{os.getpid()}\n", encoding="utf-8")
    return True
