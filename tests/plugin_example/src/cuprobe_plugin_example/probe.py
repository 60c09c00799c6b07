"""example-sum: a CPU probe that checks math.fsum against a naive sum, registered from another package."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.probes import Probe, Recorder, Tool


class ExampleSumParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(1000, ge=1, le=1_000_000, description="how many 0.1s to add")


class ExampleSum(Probe[ExampleSumParams]):
    name = "example-sum"
    summary = "Adds n copies of 0.1 naively and with fsum; a gap beyond n * eps is a finding"
    Params = ExampleSumParams
    tools = (Tool.NONE,)
    needs_gpu = False

    def run(self, params: ExampleSumParams, tool: Tool, recorder: Recorder) -> None:
        case = recorder.case(f"n={params.n}", self.expectation(params, tool), n=params.n)
        naive = sum([0.1] * params.n)
        exact = math.fsum([0.1] * params.n)
        gap = abs(naive - exact) / exact
        case.observations.update(naive=naive, fsum=exact, relative_gap=gap)
        if gap > params.n * 2.0**-52:
            case.violations.append(f"naive sum off by {gap:.3g}, beyond n * eps")
