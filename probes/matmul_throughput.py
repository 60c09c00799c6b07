"""matmul-throughput: TFLOP/s per dtype and shape with CUDA events, against the measured bf16 ceiling."""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cuprobe.contract import Tool
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.throughput_verdict import Measurement, ceiling, violations

DType = Literal["fp32", "tf32", "fp16", "bf16"]
ALL_DTYPES: tuple[DType, ...] = ("fp32", "tf32", "fp16", "bf16")
Shape = list[int]


class MatmulThroughputParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dtypes: list[DType] = Field(default_factory=lambda: list(ALL_DTYPES), min_length=1)
    shapes: list[Shape] = Field(
        default_factory=lambda: [[5120, 768, 2048], [5120, 2048, 8192]],
        min_length=1,
        description="[M, N, K]: an [M, K] @ [K, N] matmul",
    )
    ceiling_shape: Shape = Field(
        default_factory=lambda: [8192, 8192, 8192], description="an extra bf16 shape measured for the ceiling"
    )
    warmup: int = Field(10, ge=1, le=1000)
    repeats: int = Field(50, ge=3, le=10000)
    rotate: int = Field(
        4, ge=1, le=64, description="input sets cycled so no repeat reuses the last one's cache"
    )
    fraction: float = Field(
        0.5, gt=0, le=1, description="fp16/bf16 under this fraction of the ceiling: finding"
    )

    @field_validator("shapes", "ceiling_shape")
    @classmethod
    def _shapes(cls, value: Any) -> Any:
        for shape in value if value and isinstance(value[0], list) else [value]:
            if len(shape) != 3 or any(not 1 <= d <= 65536 for d in shape):
                raise ValueError(f"a shape is [M, N, K] with each in 1..65536 (got {shape})")
        return value


def time_matmul(torch: Any, dtype: DType, shape: Shape, params: MatmulThroughputParams) -> Measurement:
    """Median seconds of one matmul, each timed with its own pair of CUDA events, inputs rotated."""
    m, n, k = shape
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    tdtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[
        dtype
    ]
    sets = [
        (torch.randn(m, k, device="cuda", dtype=tdtype), torch.randn(k, n, device="cuda", dtype=tdtype))
        for _ in range(params.rotate)
    ]
    for i in range(params.warmup):
        a, b = sets[i % params.rotate]
        a @ b
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(params.repeats)
    ]
    for i, (start, end) in enumerate(events):
        a, b = sets[i % params.rotate]
        start.record()
        a @ b
        end.record()
    torch.cuda.synchronize()
    median_ms = statistics.median(start.elapsed_time(end) for start, end in events)
    return Measurement(dtype=dtype, shape=(m, n, k), median_s=median_ms / 1e3)


class MatmulThroughput(Probe[MatmulThroughputParams]):
    name = "matmul-throughput"
    summary = "TFLOP/s per dtype and shape vs the measured bf16 ceiling; fp16/bf16 off the fast path: finding"
    Params = MatmulThroughputParams
    tools = (Tool.NONE,)
    bare_only = True

    def run(self, params: MatmulThroughputParams, tool: Tool, recorder: Recorder) -> None:
        from cuprobe.probes.torch_env import import_torch

        torch = import_torch("cuda", tool, recorder)
        recorder.result.context["gpu"] = torch.cuda.get_device_name()
        measured = [time_matmul(torch, "bf16", params.ceiling_shape, params)]
        measured += [time_matmul(torch, d, s, params) for s in params.shapes for d in params.dtypes]
        top = ceiling(measured)
        recorder.result.context["bf16_ceiling_tflops"] = top
        for i, x in enumerate(measured):
            m, n, k = x.shape
            case_id = f"{x.dtype}-{m}x{n}x{k}" + ("-ceiling" if i == 0 else "")
            case = recorder.case(case_id, self.expectation(params, tool), dtype=x.dtype, shape=list(x.shape))
            case.observations.update(
                median_ms=x.median_s * 1e3,
                tflops=x.tflops,
                fraction_of_bf16_ceiling=x.tflops / top if top else None,
                judged=x.dtype in ("fp16", "bf16") and i > 0,
            )
            if i > 0:
                case.violations.extend(violations(x, measured, params.fraction))
