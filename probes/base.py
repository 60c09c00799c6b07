"""The Probe base class and the recorder a probe writes its cases into."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from probes.contract import Allocation, CaseResult, Expectation, ProbeResult, Tool


class ProbeUnavailable(RuntimeError):
    """The probe cannot run here (no CUDA device, a missing package); the message says how to get it."""


class Recorder:
    """Collects the cases of one probe run and writes result.json atomically."""

    def __init__(self, probe: str, tool: Tool, params: BaseModel) -> None:
        self.result = ProbeResult(probe=probe, tool=tool, params=params.model_dump(mode="json"))

    def case(self, case_id: str, expectation: Expectation, **params: Any) -> CaseResult:
        case = CaseResult(id=case_id, params=params, expectation=expectation)
        self.result.cases.append(case)
        return case

    @staticmethod
    def allocation(case: CaseResult, name: str, start: int, size: int) -> None:
        case.allocations.append(Allocation(name=name, start=int(start), size=int(size)))

    def write(self, path: Path) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.result.model_dump(mode="json"), indent=1))
        os.replace(tmp, path)


class Probe(ABC):
    """A probe program: declares params, tools, expectations; runs inside the sanitizer."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    tools: ClassVar[tuple[Tool, ...]]  # the first is the default tool
    needs_gpu: ClassVar[bool] = True

    def expectation(self, params: BaseModel, tool: Tool) -> Expectation:
        """What every case of this probe expects under `tool`; clean unless overridden."""
        return Expectation()

    @abstractmethod
    def run(self, params: BaseModel, tool: Tool, recorder: Recorder) -> None:
        """Run every case, recording observations and allocations into `recorder`."""
