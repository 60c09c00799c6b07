"""determinism: one op with fixed inputs in N fresh processes; are the output bits the same in each?"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cuprobe import IMPORT_ROOT
from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.allocator import FIELD_DESCRIPTION, Allocator
from cuprobe.probes.base import Probe, Recorder
from cuprobe.probes.determinism_ops import EXPECTED

Op = Literal["matmul", "index_add", "triton-splitk", "unseeded"]
DEFAULT_OPS: tuple[Op, ...] = ("matmul", "index_add")


class DeterminismParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ops: list[Op] = Field(
        default_factory=lambda: list(DEFAULT_OPS),
        min_length=1,
        description="unseeded is a positive control that must vary",
    )
    device: Literal["cpu", "cuda"] = "cuda"
    processes: int = Field(8, ge=2, le=64, description="fresh processes, run one after another")
    size: int = Field(256, ge=1, le=8192, description="matmul is size x size; index_add has size columns")
    triton_shape: list[int] = Field(
        default_factory=lambda: [256, 256, 8192],
        min_length=3,
        max_length=3,
        description="M, N, K of the Triton split-K matmul",
    )
    autotune_cache: Literal["none", "shared"] = Field(
        "none", description="shared: one on-disk Triton autotune cache for all processes of this run"
    )
    seed: int = Field(0, ge=0)
    allocator: Allocator | None = Field(None, description=FIELD_DESCRIPTION)
    timeout_s: float = Field(600, gt=0, le=3600, description="wall-clock limit per process")

    @model_validator(mode="after")
    def _triton_needs_cuda(self) -> DeterminismParams:
        if "triton-splitk" in self.ops and self.device != "cuda":
            raise ValueError("ops: triton-splitk runs on device cuda only")
        if len(set(self.ops)) != len(self.ops):
            raise ValueError(f"ops must be distinct (got {self.ops})")
        return self


def compare(outputs: list[np.ndarray[Any, Any]]) -> dict[str, Any]:
    """Worst bitwise difference of each output from the first: fraction of differing elements, max |diff|."""
    first = outputs[0]
    fraction, max_abs = 0.0, 0.0
    for other in outputs[1:]:
        if other.shape != first.shape:
            return {"differing_fraction": 1.0, "max_abs_diff": None}
        differs = first.view(np.uint8).reshape(first.size, -1) != other.view(np.uint8).reshape(other.size, -1)
        fraction = max(fraction, float(differs.any(axis=1).mean()))
        max_abs = max(max_abs, float(np.max(np.abs(first.astype(np.float64) - other.astype(np.float64)))))
    return {"differing_fraction": fraction, "max_abs_diff": max_abs}


class Determinism(Probe[DeterminismParams]):
    name = "determinism"
    summary = "Runs an op in N fresh processes and compares output bits (matmul, index_add_, Triton split-K)"
    Params = DeterminismParams
    tools = (Tool.NONE,)
    needs_gpu = False
    bare_only = True

    def gpu_needed(self, params: DeterminismParams) -> bool:
        return params.device == "cuda"

    def run(self, params: DeterminismParams, tool: Tool, recorder: Recorder) -> None:
        if params.device == "cuda":
            from cuprobe.probes.gpu import cuda_device_count

            if cuda_device_count() == 0:
                from cuprobe.probes.base import ProbeUnavailable

                raise ProbeUnavailable("no CUDA device: run determinism with device cuda on a GPU worker")
        with tempfile.TemporaryDirectory(prefix="cuprobe-determinism-") as tmp:
            work = Path(tmp)
            env = self._child_env(params, work / "triton-cache")
            spec = params.model_dump(mode="json")
            cache_files: list[list[str]] = []
            for i in range(params.processes):
                self._spawn(spec, work / f"p{i}", env, params.timeout_s)
                cache_files.append(
                    sorted(str(p.relative_to(work)) for p in work.glob("triton-cache/**/*.autotune.json"))
                )
            reports = [
                json.loads((work / f"p{i}" / "report.json").read_text()) for i in range(params.processes)
            ]
            allocators = [r["allocator"] for r in reports if "allocator" in r]
            if allocators:
                recorder.result.context.update(allocators[0])
                recorder.result.context["allocators_in_children"] = sorted({a["allocator"] for a in allocators})
            for op in params.ops:
                outputs = [np.load(work / f"p{i}" / f"{op}.npy") for i in range(params.processes)]
                case = recorder.case(
                    op,
                    self.expectation(params, tool),
                    op=op,
                    device=params.device,
                    processes=params.processes,
                )
                self._judge(params, op, case, outputs, [r[op] for r in reports], cache_files)

    @staticmethod
    def _child_env(params: DeterminismParams, triton_cache: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(IMPORT_ROOT), env.get("PYTHONPATH", "")] if p
        )
        env["TRITON_CACHE_DIR"] = str(triton_cache)  # private to this run: no stale autotune results leak in
        if params.autotune_cache == "shared":
            env["TRITON_CACHE_AUTOTUNING"] = "1"
        else:
            env.pop("TRITON_CACHE_AUTOTUNING", None)
        return env

    @staticmethod
    def _spawn(spec: dict[str, Any], out: Path, env: dict[str, str], timeout_s: float) -> None:
        cmd = [sys.executable, "-m", "cuprobe.probes.determinism_ops", json.dumps(spec), str(out)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0:
            raise RuntimeError(
                f"determinism child {out.name} exited {proc.returncode}: {proc.stderr[-4000:]}"
            )

    @staticmethod
    def _judge(
        params: DeterminismParams,
        op: str,
        case: CaseResult,
        outputs: list[np.ndarray[Any, Any]],
        reports: list[dict[str, Any]],
        cache_files: list[list[str]],
    ) -> None:
        digests = [r["digest"] for r in reports]
        expected = EXPECTED[(op, params.device)]
        distinct = len(set(digests))
        obs = case.observations
        obs.update(
            expected=expected,
            digests=digests,
            distinct_digests=distinct,
            varied=distinct > 1,
            **compare(outputs),
            choices=[r["choice"] for r in reports],
        )
        if op == "index_add" and params.device == "cpu":
            obs["note"] = (
                "CPU index_add_ accumulates in a fixed order and is deterministic; CUDA uses atomics"
            )
        if expected == "deterministic" and distinct > 1:
            configs = sorted({str(r["choice"].get("config")) for r in reports if r["choice"]})
            picked = f"; configs picked: {', '.join(configs)}" if configs else ""
            case.violations.append(
                f"{op} gave {distinct} distinct outputs in {params.processes} processes "
                f"(max |diff| {obs['max_abs_diff']}){picked}"
            )
        if expected == "must vary" and distinct == 1:
            case.violations.append(
                f"{op} is a positive control that must vary, but all {params.processes} "
                "processes agreed: the probe cannot see nondeterminism"
            )
        if op == "triton-splitk" and params.autotune_cache == "shared":
            Determinism._judge_cache(case, reports, cache_files)

    @staticmethod
    def _judge_cache(case: CaseResult, reports: list[dict[str, Any]], cache_files: list[list[str]]) -> None:
        materialised = bool(cache_files[0])
        later = reports[1:]
        reused = [not r["choice"]["benchmarked"] for r in later]
        same = [r["choice"]["config"] == reports[0]["choice"]["config"] for r in later]
        case.observations["cache"] = {
            "materialised_after_first": materialised,
            "files": cache_files[-1],
            "later_reused": sum(reused),
            "later_same_config": sum(same),
            "later": len(later),
        }
        if not materialised:
            case.violations.append("the shared autotune cache never materialised after the first process")
        elif not all(reused) or not all(same):
            case.violations.append(
                f"the shared autotune cache existed but only {sum(reused)} of {len(later)} later "
                f"processes reused it ({sum(same)} picked the first process's config)"
            )
