"""narrow-linear: torch.nn.functional.linear at narrow out_features (the seed's A3 on torch), per dtype."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cuprobe.contract import Tool
from cuprobe.probes.allocator import FIELD_DESCRIPTION, Allocator
from cuprobe.probes.base import Probe, Recorder

DType = Literal["float32", "bfloat16"]
DTYPES: tuple[DType, ...] = ("float32", "bfloat16")
DEFAULT_OUT = [1, 2, 3, 4, 8, 16, 32, 64]


class NarrowLinearParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    batch: int = Field(32, ge=1, le=8192)
    in_features: int = Field(256, ge=1, le=8192)
    out_features: list[int] = Field(default_factory=lambda: list(DEFAULT_OUT), min_length=1, max_length=256)
    dtypes: list[DType] = Field(default_factory=lambda: list(DTYPES), min_length=1)
    bias: bool = Field(False, description="with a bias, addmm first copies it into the output (a tracked write)")
    # Caching on: a cached block written by an earlier case looks initialized to initcheck.
    allocator: Allocator | None = Field(None, description=FIELD_DESCRIPTION)
    seed: int = Field(0, ge=0)

    @field_validator("out_features")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        if any(not 1 <= n <= 8192 for n in value) or len(set(value)) != len(value):
            raise ValueError(f"out_features must be distinct integers in 1..8192 (got {value})")
        return value


class NarrowLinear(Probe[NarrowLinearParams]):
    name = "narrow-linear"
    summary = "torch.nn.functional.linear at batch 32 x 256 -> narrow out_features, fp32 and bf16, caching on or off"
    Params = NarrowLinearParams
    tools = (Tool.INITCHECK, Tool.MEMCHECK, Tool.NONE)
    beats = True  # short cases: the runner's watchdog may stop and retry a run that stops making progress
    warms = True  # its cases run in its own process: a spare can get ready before its parameters come
    poisonable = True

    def uses_torch(self, params: NarrowLinearParams) -> bool:
        return True

    def run(self, params: NarrowLinearParams, tool: Tool, recorder: Recorder) -> None:
        from cuprobe.probes.torch_env import import_torch, record_tensors, tensor_bytes, tensor_values

        torch = import_torch("cuda", tool, recorder, params.allocator)
        torch.backends.cuda.matmul.allow_tf32 = False
        gen = torch.Generator().manual_seed(params.seed)
        keep = []  # every tensor lives to the end, so no address is reused by a later case (attribution)
        for dtype_name in params.dtypes:
            dtype = getattr(torch, dtype_name)
            for n in params.out_features:
                case = recorder.case(
                    f"{dtype_name}-out{n}",
                    self.expectation(params, tool),
                    dtype=dtype_name,
                    out_features=n,
                    batch=params.batch,
                    in_features=params.in_features,
                    allocator=params.allocator,
                )
                x = torch.randn(params.batch, params.in_features, generator=gen).to(dtype).cuda()
                w = torch.randn(n, params.in_features, generator=gen).to(dtype).cuda()
                b = torch.randn(n, generator=gen).to(dtype).cuda() if params.bias else None
                y = torch.nn.functional.linear(x, w, b)
                torch.cuda.synchronize()
                record_tensors(recorder, case, x=x, w=w, y=y, **({"b": b} if b is not None else {}))
                recorder.poison.checkpoint(
                    case.id, "before y.double() (the first read of linear's output)", y=tensor_bytes(y)
                )
                recorder.poison.output(case.id, "y", tensor_values(y))
                ref = x.double().cpu() @ w.double().cpu().T + (b.double().cpu() if b is not None else 0)
                y64 = y.double().cpu()
                scale = float(ref.abs().max()) or 1.0
                err = float((y64 - ref).abs().max()) / scale
                tol = 4.0 * params.in_features * float(torch.finfo(dtype).eps)
                case.observations.update(max_rel_err=err, tolerance=tol)
                if not err <= tol:
                    case.violations.append(f"linear wrong: max relative error {err:.3g} > tolerance {tol:.3g}")
                keep += [x, w, y, b]
