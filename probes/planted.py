"""planted: positive controls for memcheck, racecheck and synccheck, one planted defect per run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import Expectation, Tool
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.kinds import INVALID_GLOBAL_WRITE, SHARED_MEMORY_HAZARD, SYNC_INVALID_ARGUMENT

Defect = Literal["oob", "race", "syncwarp", "sound"]
# Which tool each planted defect is for, and the finding kind it must produce there.
CONTROLS: dict[str, tuple[Tool, str]] = {
    "oob": (Tool.MEMCHECK, INVALID_GLOBAL_WRITE),
    "race": (Tool.RACECHECK, SHARED_MEMORY_HAZARD),
    "syncwarp": (Tool.SYNCCHECK, SYNC_INVALID_ARGUMENT),
}
DEFAULT_DEFECT_FOR_TOOL: dict[Tool, str] = {tool: defect for defect, (tool, _) in CONTROLS.items()}


class PlantedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    defect: Defect | None = Field(
        None,
        description="oob (memcheck), race (racecheck), syncwarp (synccheck), sound (none); "
        "default: the control for the tool",
    )


class Planted(Probe[PlantedParams]):
    name = "planted"
    summary = "Positive controls: an out-of-bounds write, a missing barrier, an invalid __syncwarp mask"
    Params = PlantedParams
    tools = (Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.INITCHECK, Tool.NONE)

    @staticmethod
    def defect_for(params: PlantedParams, tool: Tool) -> str:
        return params.defect or DEFAULT_DEFECT_FOR_TOOL.get(tool, "sound")

    def expectation(self, params: PlantedParams, tool: Tool) -> Expectation:
        control = CONTROLS.get(self.defect_for(params, tool))
        if control and control[0] is tool:
            return Expectation.positive_control(*control)
        return Expectation()

    def run(self, params: PlantedParams, tool: Tool, recorder: Recorder) -> None:
        import numpy as np

        from cuprobe.kernels import load_module
        from cuprobe.probes.gpu import cuda_context

        defect = self.defect_for(params, tool)
        case = recorder.case(defect, self.expectation(params, tool), defect=defect)
        with cuda_context() as cuda:
            module = load_module("planted")
            buffers = []
            try:
                if defect == "oob":
                    n = 1000
                    out = cuda.mem_alloc(n * 4)
                    buffers.append(out)
                    recorder.allocation(case, "out", int(out), n * 4)
                    module.get_function("oob_write")(out, np.int32(n), block=(256, 1, 1), grid=(4, 1))
                elif defect == "syncwarp":
                    out = cuda.mem_alloc(32 * 4)
                    buffers.append(out)
                    recorder.allocation(case, "out", int(out), 32 * 4)
                    module.get_function("bad_syncwarp")(out, block=(32, 1, 1), grid=(1, 1))
                else:
                    src = cuda.to_device(np.ones(1024, dtype=np.float32))
                    out = cuda.mem_alloc(4 * 4)
                    buffers += [src, out]
                    recorder.allocation(case, "in", int(src), 1024 * 4)
                    recorder.allocation(case, "out", int(out), 4 * 4)
                    name = "racy_reduce" if defect == "race" else "sound_reduce"
                    module.get_function(name)(src, out, block=(256, 1, 1), grid=(4, 1))
                cuda.Context.synchronize()
                case.observations["launch_error"] = None
            except cuda.Error as exc:
                # Under memcheck the planted write is a precise error that ends the context: expected fallout.
                case.observations["launch_error"] = str(exc)
            for buf in buffers:
                try:
                    buf.free()
                except cuda.Error:
                    break
