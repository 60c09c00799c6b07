"""replay: a torch program run N times in fresh processes with the same seeds; names the first diverging tensor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cuprobe import IMPORT_ROOT, internal_env
from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.base import Probe, ProbeUnavailable, Recorder
from cuprobe.probes.command import child_env

ENTRY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$"
PLOT_NAME = "replay-growth.svg"


class ReplayError(RuntimeError):
    """The program could not be replayed (bad entry point, it raised, it never reached a step boundary)."""


class ReplayParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry: str | None = Field(None, pattern=ENTRY_PATTERN, description="package.module:function to call")
    script: list[str] | None = Field(None, min_length=1, description="script path and its arguments")
    example: Literal["transformer"] | None = Field(
        None, description="the built-in example program (the default when neither entry nor script is given)"
    )
    example_steps: int = Field(3, ge=1, le=100)
    example_plant: Literal["none", "index-add"] = Field(
        "none", description="index-add: a layer accumulating floats with index_add_ (atomics on CUDA)"
    )
    device: Literal["cpu", "cuda"] = Field("cpu", description="where the program runs (cuda needs a GPU worker)")
    processes: int = Field(3, ge=2, le=16, description="fresh processes; each is compared with the first")
    seed: int = Field(0, ge=0)
    magnitude_threshold: float | None = Field(1e6, gt=0, description="max |x| that trips the watch; null: NaN/inf only")
    capture: bool = Field(True, description="re-run two processes to keep the first diverging tensor in full")
    deterministic_algorithms: bool = Field(False, description="torch.use_deterministic_algorithms(True) in every run")
    second_opinion: bool = Field(
        False,
        description="on a divergence, replay again with pinned threads and deterministic algorithms and label the "
        "finding",
    )
    output_grads: Literal["none", "retain", "hooks"] = Field(
        "none",
        description="the gradients of module outputs: none (not recorded: backward is seen through the parameters' "
        "gradients; the cheapest), retain (autograd keeps them until the optimizer step, no Python during backward: "
        "names where in backward a divergence began) or hooks (a Python hook per output; less memory held, slower)",
    )
    persistent_autotune: bool = Field(False, description="TRITON_CACHE_AUTOTUNING=1 in every process")
    triton_cache_dir: str | None = Field(None, description="default: a fresh directory shared by this run's processes")
    cwd: str | None = Field(
        None, description="working directory of the program, also on its PYTHONPATH (default: where cuprobe started)"
    )
    timeout_s: float = Field(600, gt=0, le=24 * 3600, description="wall-clock limit per process")

    @model_validator(mode="after")
    def _one_program(self) -> ReplayParams:
        given = [name for name in ("entry", "script", "example") if getattr(self, name)]
        if len(given) > 1:
            raise ValueError(f"give exactly one of entry, script or example (got {', '.join(given)})")
        if not given:
            self.example = "transformer"  # no program named: the built-in example (so `cuprobe check` runs replay)
        return self


class Replay(Probe[ReplayParams]):
    name = "replay"
    summary = "Runs a torch program in N processes with the same seeds; names the first diverging tensor"
    Params = ReplayParams
    tools = (Tool.NONE,)
    needs_gpu = False
    bare_only = True

    def gpu_needed(self, params: ReplayParams) -> bool:
        return params.device == "cuda"

    def run(self, params: ReplayParams, tool: Tool, recorder: Recorder) -> None:
        if params.device == "cuda":
            from cuprobe.probes.gpu import cuda_device_count

            if cuda_device_count() == 0:
                raise ProbeUnavailable("no CUDA device: run replay with device cuda on a GPU worker")
        program = params.entry or params.script or f"example {params.example}"
        case = recorder.case("replay", self.expectation(params, tool), program=program, processes=params.processes)
        with tempfile.TemporaryDirectory(prefix="cuprobe-replay-") as tmp:
            work = Path(tmp)
            cache = Path(params.triton_cache_dir) if params.triton_cache_dir else work / "triton-cache"
            unwritable = unwritable_reason(cache) if params.persistent_autotune else None
            try:
                reports = self._replay(params, work / "run", cache, deterministic_run(params), pinned_run(params))
            except ReplayError as exc:
                if unwritable is None:
                    raise
                from cuprobe.probes.replay.judge import judge_unwritable_cache

                judge_unwritable_cache(case, cache, unwritable, str(exc))  # the cause of the failure, found
                return
            self._judge(params, case, reports, work, cache, unwritable)
        if recorder.artifacts_dir is not None and case.findings:
            _plot(case, recorder.artifacts_dir / PLOT_NAME)

    def _replay(self, params: ReplayParams, work: Path, cache: Path, deterministic: bool, pinned: bool,
                capture: int | None = None, count: int | None = None) -> list[dict[str, Any]]:
        """Run the program in `count` (default: params.processes) fresh processes, one after another."""
        spec = {
            **params.model_dump(mode="json"),
            "deterministic_algorithms": deterministic,
            "pinned_threads": pinned,
            "capture_index": capture,
        }
        env = _child_env(params, cache, deterministic, pinned)
        reports = []
        for i in range(count or params.processes):
            out = work / f"p{i}"
            cmd = [sys.executable, "-m", "cuprobe.probes.replay.child", json.dumps(spec), str(out)]
            try:
                proc = subprocess.run(
                    cmd, env=env, cwd=program_dir(params), capture_output=True, text=True, timeout=params.timeout_s
                )
            except subprocess.TimeoutExpired:
                raise ReplayError(f"process {i} exceeded its limit of {params.timeout_s:g} s") from None
            report_path = out / "report.json"
            if not report_path.exists():
                raise ReplayError(
                    f"process {i} exited {proc.returncode} without a report: {_last(proc.stderr) or 'no output'}"
                )
            report = json.loads(report_path.read_text())
            if report["error"]:
                raise ReplayError(f"process {i}: {report['error'].splitlines()[0]}")
            if report["steps"] == 0:
                raise ReplayError(
                    f"process {i}: the program never reached a step boundary (no optimizer.step() and no "
                    "cuprobe.probes.replay.step() call), so there is nothing to compare"
                )
            report["capture"] = out / "capture.pt" if (out / "capture.pt").exists() else None
            reports.append(report)
        return reports

    def _judge(self, params: ReplayParams, case: CaseResult, reports: list[dict[str, Any]], work: Path,
               cache: Path, unwritable: str | None) -> None:
        from cuprobe.probes.replay.judge import (
            judge_autotune,
            judge_digest_paths,
            judge_divergence,
            judge_magnitude,
            judge_unwritable_cache,
        )


        obs = case.observations
        obs.update(
            steps=[r["steps"] for r in reports],
            records=[len(r["records"]) for r in reports],
            pids=[r["pid"] for r in reports],
            deterministic_algorithms=deterministic_run(params),
            pinned_threads=pinned_run(params),
        )
        firsts = judge_divergence(case, reports, params.output_grads)
        judge_magnitude(case, reports, params.magnitude_threshold)
        judge_autotune(case, reports, params.persistent_autotune, cache)
        judge_digest_paths(case, reports)
        if unwritable is not None:
            judge_unwritable_cache(case, cache, unwritable, None)
        diverged = next((d for d in firsts if d is not None and d.kind == "value"), None)
        if diverged is not None and params.capture:
            self._capture(params, case, work, cache, diverged.index)
        if any(firsts) and params.second_opinion and not (deterministic_run(params) and pinned_run(params)):
            self._second_opinion(params, case, work, cache)

    def _capture(self, params: ReplayParams, case: CaseResult, work: Path, cache: Path, index: int) -> None:
        """Two fresh processes keep tensor `index` in full: elements differing, max abs and relative diff."""
        import torch

        from cuprobe.probes.replay.judge import tensor_diff

        pair = self._replay(
            params, work / "capture", cache, deterministic_run(params), pinned_run(params), index, 2
        )
        tensors = [torch.load(r["capture"]) for r in pair if r["capture"] is not None]
        diff: dict[str, Any] = {"index": index}
        if len(tensors) == 2:
            diff.update(tensor_diff(tensors[0], tensors[1]))
            if not diff["differing"]:
                diff["note"] = "the capture re-run did not diverge at this tensor: the nondeterminism did not recur"
        else:
            diff["note"] = f"the capture re-run kept this tensor in {len(tensors)} of 2 processes: nothing to compare"
        case.observations["first_divergence_diff"] = diff
        for finding in case.findings:
            if finding.kind == "replay-divergence" and finding.details["index"] == index:
                finding.details["diff"] = diff
                if diff.get("differing"):
                    finding.message += (
                        f"; {diff['differing']} of {diff['elements']} elements differ, max |diff| "
                        f"{diff['max_abs_diff']:.3g}, max relative diff {diff['max_rel_diff']:.3g}"
                    )
                elif diff.get("differing") == 0:
                    finding.message += "; the capture re-run's two processes agreed at this tensor: it did not recur"

    def _second_opinion(self, params: ReplayParams, case: CaseResult, work: Path, cache: Path) -> None:
        """Replay with pinned threads and torch.use_deterministic_algorithms(True): a divergence that goes away is
        labelled so (it came from the thread settings or a nondeterministic algorithm, not from the program)."""
        from cuprobe.probes.replay.compare import first_divergence

        try:
            again = self._replay(params, work / "deterministic", cache, True, True)
        except ReplayError as exc:
            verdict = f"could not run with {PINNED_AND_DETERMINISTIC}: {exc}"
        else:
            still = [first_divergence(again[0]["records"], r["records"]) for r in again[1:]]
            verdict = f"{'persists' if any(still) else 'goes away'} with {PINNED_AND_DETERMINISTIC}"
        case.observations["second_opinion"] = verdict
        for finding in case.findings:
            if finding.kind in ("replay-divergence", "replay-structure"):
                finding.message += f"; {verdict}"
                finding.details["second_opinion"] = verdict


# Read when OpenMP, MKL and OpenBLAS start: a fixed thread count, and no shrinking a parallel region's team when
# the machine is busy (a team of another size splits a sum into other chunks, so other bits).
PINNED_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_DYNAMIC": "FALSE",
    "MKL_DYNAMIC": "FALSE",
}
PINNED_AND_DETERMINISTIC = (
    "pinned threads (1 intra-op, 1 inter-op, no dynamic threading) and torch.use_deterministic_algorithms(True)"
)


def unwritable_reason(directory: Path) -> str | None:
    """Why nothing can be written to `directory` (created when missing, as Triton would); None when it can."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".cuprobe-write-check-"):
            pass
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return None


def program_dir(params: ReplayParams) -> str:
    """Where the program runs: its `cwd`, else the directory cuprobe was started from, else this process's."""
    return params.cwd or os.environ.get(internal_env.CALLER_CWD) or os.getcwd()


def deterministic_run(params: ReplayParams) -> bool:
    """torch.use_deterministic_algorithms(True): when asked, and always for the built-in example without its plant
    (the plant is a nondeterministic algorithm on purpose)."""
    return params.deterministic_algorithms or (params.example is not None and params.example_plant == "none")


def pinned_run(params: ReplayParams) -> bool:
    """One intra-op and one inter-op thread, no dynamic threading: for the built-in example, so that its processes
    compute the same bits by construction however loaded the machine is."""
    return params.example is not None


def _child_env(params: ReplayParams, cache: Path, deterministic: bool, pinned: bool) -> dict[str, str]:
    env, _ = child_env(dict(os.environ))  # the user's program never sees the service's credentials
    root = str(IMPORT_ROOT)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [program_dir(params), root, env.get("PYTHONPATH", "")] if p)
    env["PYTHONHASHSEED"] = str(params.seed)  # same str hashes, so the same set and dict iteration order
    env["TRITON_CACHE_DIR"] = str(cache)
    if params.persistent_autotune:
        env["TRITON_CACHE_AUTOTUNING"] = "1"
    if deterministic:
        env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS refuses deterministic mode without it
    if pinned:
        env.update(PINNED_ENV)
    return env


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _plot(case: CaseResult, path: Path) -> None:
    """Diverging tensors per step for each comparison, as SVG (skipped when matplotlib is not installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        case.observations["plot"] = "matplotlib is not installed: no plot"
        return
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for comparison in case.observations.get("comparisons", []):
        rows = comparison["growth"]
        axis.plot([r["step"] for r in rows], [r["diverging"] for r in rows], marker="o",
                  label=f"process {comparison['process']} vs 0")
    axis.set_xlabel("step")
    axis.set_ylabel("diverging tensors")
    axis.set_title("replay: divergence growth")
    axis.legend()
    figure.savefig(path, format="svg", bbox_inches="tight")
    plt.close(figure)
    case.observations["plot"] = path.name
