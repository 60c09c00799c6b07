"""bf16-matmul: runs bf16 x bf16 matmul on a backend and classifies what it did, with a tripwire."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import Tool
from cuprobe.probes.allocator import FIELD_DESCRIPTION, Allocator
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.bf16_classify import Bf16Class, Bf16Observation, classify

Backend = Literal["torch-cuda", "torch-cpu", "pycuda"]
DEFAULT_BACKENDS: tuple[Backend, ...] = ("torch-cuda",)


class Bf16MatmulParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backends: list[Backend] = Field(default_factory=lambda: list(DEFAULT_BACKENDS), min_length=1)
    m: int = Field(256, ge=1, le=16384)
    k: int = Field(256, ge=1, le=16384)
    n: int = Field(256, ge=1, le=16384)
    expect: Bf16Class | None = Field(None, description="tripwire: a different observed class is a finding")
    timing: bool = Field(True, description="time bf16 against fp32 (bare runs only; never under a sanitizer)")
    repeats: int = Field(20, ge=3, le=1000)
    garbage_factor: float = Field(4.0, gt=0)
    speed_margin: float = Field(0.8, gt=0, le=1)
    seed: int = Field(0, ge=0)
    allocator: Allocator | None = Field(None, description=FIELD_DESCRIPTION)


def median_time(run: Callable[[], Any], sync: Callable[[], Any], repeats: int) -> float:
    """Median wall time of `run` in seconds after two warm-ups (sync waits for a device)."""
    for _ in range(2):
        run()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Bf16Matmul(Probe[Bf16MatmulParams]):
    name = "bf16-matmul"
    summary = "Classifies bf16 x bf16 matmul per backend: refused, native, silent_upcast or garbage"
    Params = Bf16MatmulParams
    tools = (Tool.NONE, Tool.INITCHECK, Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK)
    beats = True  # short cases: the runner's watchdog may stop and retry a run that stops making progress
    warms = True  # its cases run in its own process: a spare can get ready before its parameters come
    needs_gpu = False
    poisonable = True

    def uses_torch(self, params: Bf16MatmulParams) -> bool:
        return any(b.startswith("torch") for b in params.backends)

    def gpu_needed(self, params: Bf16MatmulParams) -> bool:
        return "torch-cuda" in params.backends

    def run(self, params: Bf16MatmulParams, tool: Tool, recorder: Recorder) -> None:
        timed = params.timing and tool is Tool.NONE
        recorder.result.context["timing"] = "measured" if timed else "not measured (sanitizer or timing off)"
        for backend in params.backends:
            case = recorder.case(backend, self.expectation(params, tool), backend=backend,
                                 m=params.m, k=params.k, n=params.n)
            if backend == "pycuda":
                obs = self._pycuda(params)
            else:
                obs = self._torch(params, backend, tool, recorder, case, timed)
            verdict = classify(obs, params.garbage_factor, params.speed_margin)
            case.observations.update(obs.model_dump(), **{"class": verdict.cls.value},
                                     evidence=verdict.evidence, reasons=verdict.reasons)
            if params.expect is not None and verdict.cls is not params.expect:
                case.violations.append(
                    f"bf16 matmul on {backend}: expected {params.expect.value}, observed {verdict.cls.value} "
                    f"({'; '.join(verdict.reasons)})"
                )

    @staticmethod
    def _pycuda(params: Bf16MatmulParams) -> Bf16Observation:
        from cuprobe.kernels.matmul_backend import UnsupportedDtype, matmul

        a = np.zeros((params.m, params.k), dtype=np.float32)
        try:
            matmul(a, np.zeros((params.n, params.k), dtype=np.float32), "bfloat16")
        except UnsupportedDtype as exc:
            return Bf16Observation(error=str(exc), k=params.k)
        raise AssertionError("the pycuda backend accepted bfloat16")  # it has no bf16 kernel: a probe bug

    @staticmethod
    def _torch(params: Bf16MatmulParams, backend: str, tool: Tool, recorder: Recorder, case: Any,
               timed: bool) -> Bf16Observation:
        from cuprobe.probes.torch_env import import_torch, record_tensors, tensor_bytes, tensor_values

        device = "cuda" if backend == "torch-cuda" else "cpu"
        torch = import_torch(device, tool, recorder, params.allocator)
        torch.backends.cuda.matmul.allow_tf32 = False
        gen = torch.Generator().manual_seed(params.seed)
        a = torch.randn(params.m, params.k, generator=gen).to(torch.bfloat16).to(device)
        b = torch.randn(params.k, params.n, generator=gen).to(torch.bfloat16).to(device)
        record_tensors(recorder, case, a=a, b=b)
        try:
            c = a @ b
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            return Bf16Observation(error=f"{type(exc).__name__}: {exc}", k=params.k)
        upcast_round = (a.float() @ b.float()).to(torch.bfloat16)
        record_tensors(recorder, case, c=c)
        ref = a.double().cpu() @ b.double().cpu()
        if c.is_cuda:
            # The first kernel to read c after the GEMM is the copy behind c.double(): nothing writes c until then.
            recorder.poison.checkpoint(case.id, "before c.double() (the first read of the GEMM output)",
                                       c=tensor_bytes(c))
        recorder.poison.output(case.id, "c", tensor_values(c))
        c64 = c.double().cpu()
        finite = bool(torch.isfinite(c64).all())
        scale = ref.abs().max().clamp_min(1e-300)
        rel_err = float((c64 - ref).abs().max() / scale) if finite else None
        same_shape = c.shape == upcast_round.shape and c.dtype == torch.bfloat16
        differ = float((c != upcast_round).float().mean()) if same_shape else 1.0
        obs = Bf16Observation(
            out_dtype=str(c.dtype).removeprefix("torch."), finite=finite, rel_err=rel_err, k=params.k,
            bit_identical_to_fp32_round=same_shape and bool(torch.equal(c.view(torch.int16),
                                                                       upcast_round.view(torch.int16))),
            differing_fraction=differ,
        )
        if timed:
            sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
            af, bf = a.float(), b.float()
            obs.t_bf16_s = median_time(lambda: a @ b, sync, params.repeats)
            obs.t_fp32_s = median_time(lambda: af @ bf, sync, params.repeats)
        return obs
