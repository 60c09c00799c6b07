"""planted-torch: defects planted in tensors from torch's allocator, to show what each allocator mode hides."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import CaseResult, Expectation, Tool
from cuprobe.probes.allocator import FIELD_DESCRIPTION, Allocator
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.kinds import INVALID_GLOBAL_WRITE, UNINITIALIZED_GLOBAL_READ

Defect = Literal["overrun", "stale-read", "sound"]
CONTROLS: dict[str, tuple[Tool, str]] = {
    "overrun": (Tool.MEMCHECK, INVALID_GLOBAL_WRITE),
    "stale-read": (Tool.INITCHECK, UNINITIALIZED_GLOBAL_READ),
}
DEFAULT_DEFECT_FOR_TOOL: dict[Tool, Defect] = {Tool.MEMCHECK: "overrun", Tool.INITCHECK: "stale-read"}
BLOCK = 256
FILL = 7.0  # what the freed tensor held: seen again through the reused block when the read is stale


class PlantedTorchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    defect: Defect | None = Field(
        None,
        description="overrun (memcheck: one float written past a tensor's end), stale-read (initcheck: a "
        "freed and reused block read before anything wrote it), sound (neither); default: the tool's",
    )
    n: int = Field(1000, ge=1, le=1 << 24, description="floats per tensor (1000: 4000 bytes, inside a 4096-byte block)")
    allocator: Allocator | None = Field(None, description=FIELD_DESCRIPTION)


class PlantedTorch(Probe[PlantedTorchParams]):
    name = "planted-torch"
    summary = "A write past a cached tensor's end and a read of a reused block, under each torch allocator"
    Params = PlantedTorchParams
    tools = (Tool.MEMCHECK, Tool.INITCHECK, Tool.NONE)

    @staticmethod
    def defect_for(params: PlantedTorchParams, tool: Tool) -> Defect:
        return params.defect or DEFAULT_DEFECT_FOR_TOOL.get(tool, "sound")

    def expectation(self, params: PlantedTorchParams, tool: Tool) -> Expectation:
        """A positive control under every allocator: a mode that hides the defect fails it, as it should."""
        control = CONTROLS.get(self.defect_for(params, tool))
        return Expectation.positive_control(*control) if control and control[0] is tool else Expectation()

    def run(self, params: PlantedTorchParams, tool: Tool, recorder: Recorder) -> None:
        from cuprobe.probes.torch_env import import_torch

        defect = self.defect_for(params, tool)
        torch = import_torch("cuda", tool, recorder, params.allocator)
        case = recorder.case(defect, self.expectation(params, tool), defect=defect, n=params.n)
        case.observations["past_end_in_block_rounding"] = (params.n * 4) % 512 != 0
        from cuprobe.kernels import load_module
        from cuprobe.probes.gpu import cuda_context

        with cuda_context() as cuda:
            module = load_module("planted_torch")
            try:
                if defect == "stale-read":
                    self._stale_read(torch, module, params.n, recorder, case)
                else:
                    self._write(torch, module, params.n, defect == "overrun", recorder, case)
                case.observations["launch_error"] = None
            except (RuntimeError, cuda.Error) as exc:
                # Under memcheck the planted write is a precise error that ends the context: expected fallout.
                case.observations["launch_error"] = str(exc)[:500]

    @staticmethod
    def _write(torch: Any, module: Any, n: int, overrun: bool, recorder: Recorder, case: CaseResult) -> None:
        import numpy as np

        x = torch.zeros(n, device="cuda")
        recorder.allocation(case, "x", x.data_ptr(), n * 4)
        threads = n + 1 if overrun else n  # thread n is the one that writes past the end
        module.get_function("overrun_write")(
            np.uintp(x.data_ptr()), np.int32(n if overrun else n - 1),
            block=(BLOCK, 1, 1), grid=((threads + BLOCK - 1) // BLOCK, 1),
        )
        torch.cuda.synchronize()

    @staticmethod
    def _stale_read(torch: Any, module: Any, n: int, recorder: Recorder, case: CaseResult) -> None:
        import numpy as np

        first = torch.full((n,), FILL, device="cuda")
        torch.cuda.synchronize()
        freed_at = first.data_ptr()
        del first  # back to torch's cache (caching) or to cudaFree (no-caching)
        stale = torch.empty(n, device="cuda")  # the same block again under caching: never written since
        out = torch.zeros(n, device="cuda")
        recorder.allocation(case, "stale", stale.data_ptr(), n * 4)
        recorder.allocation(case, "out", out.data_ptr(), n * 4)
        case.observations["reused_freed_block"] = stale.data_ptr() == freed_at
        module.get_function("copy_read")(
            np.uintp(stale.data_ptr()), np.uintp(out.data_ptr()), np.int32(n),
            block=(BLOCK, 1, 1), grid=((n + BLOCK - 1) // BLOCK, 1),
        )
        torch.cuda.synchronize()
        case.observations["read_the_freed_tensors_values"] = bool((out == FILL).all().item())
