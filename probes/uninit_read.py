"""uninit-read: the initcheck positive control, a kernel reading n elements of which k were written."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cuprobe.contract import Expectation, Tool
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.kinds import UNINITIALIZED_GLOBAL_READ

BYTES_PER_FLOAT = 4


class UninitReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(1024, ge=1, le=1 << 24, description="elements the kernel reads")
    k: int = Field(1000, ge=0, description="elements the host wrote first (k < n plants the defect)")
    block: int = Field(256, ge=32, le=1024, description="threads per block")

    @model_validator(mode="after")
    def _k_within_n(self) -> UninitReadParams:
        if self.k > self.n:
            raise ValueError(f"k must be <= n (got k={self.k}, n={self.n})")
        return self


class UninitRead(Probe[UninitReadParams]):
    name = "uninit-read"
    summary = "Reads n device elements of which only the first k were written (initcheck positive control)"
    Params = UninitReadParams
    tools = (Tool.INITCHECK, Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.NONE)
    beats = True  # short cases: the runner's watchdog may stop and retry a run that stops making progress
    warms = True  # its cases run in its own process: a spare can get ready before its parameters come
    poisonable = True

    def expectation(self, params: UninitReadParams, tool: Tool) -> Expectation:
        if tool is Tool.INITCHECK and params.k < params.n:
            return Expectation.positive_control(Tool.INITCHECK, UNINITIALIZED_GLOBAL_READ)
        return Expectation()

    def run(self, params: UninitReadParams, tool: Tool, recorder: Recorder) -> None:
        import numpy as np

        from cuprobe.kernels import load_module
        from cuprobe.probes.gpu import cuda_context, device_alloc, device_reader

        case_id = f"n={params.n},k={params.k}"
        case = recorder.case(case_id, self.expectation(params, tool), n=params.n, k=params.k)
        with cuda_context() as cuda:
            kernel = load_module("uninit_read").get_function("double_all")
            nbytes = params.n * BYTES_PER_FLOAT
            src = device_alloc(cuda, nbytes, recorder)
            dst = device_alloc(cuda, nbytes, recorder)
            recorder.allocation(case, "src", int(src), nbytes)
            recorder.allocation(case, "dst", int(dst), nbytes)
            host = np.ones(params.n, dtype=np.float32)
            if params.k:
                cuda.memcpy_htod(src, host[: params.k])
            grid = (params.n + params.block - 1) // params.block
            recorder.poison.checkpoint(
                case_id, "before double_all", src=device_reader(cuda, src, nbytes), dst=device_reader(cuda, dst, nbytes)
            )
            kernel(src, dst, np.int32(params.n), block=(params.block, 1, 1), grid=(grid, 1))
            cuda.Context.synchronize()
            out = np.empty(params.n, dtype=np.float32)
            cuda.memcpy_dtoh(out, dst)
            recorder.poison.output(case_id, "dst", lambda: out)
            written_ok = bool(np.all(out[: params.k] == 2.0))
            observations: dict[str, Any] = {
                "unwritten_elements_read": params.n - params.k,
                "written_part_correct": written_ok,
            }
            case.observations.update(observations)
            if not written_ok:
                case.violations.append("dst[:k] != 2 * src[:k]: the kernel computed a wrong value")
            src.free()
            dst.free()
