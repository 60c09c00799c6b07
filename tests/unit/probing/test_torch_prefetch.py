"""runner.prefetches_torch: a sanitizer run of a probe whose parameters use torch imports it on a
second thread from the process's start (probes/prefetch.py), and the probe's cases go on as they would have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cuprobe.contract import PREFETCH_TORCH_FLAG, Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import PROJECT_ROOT, GpuFacts
from cuprobe.service.probing.runner import PlannedRun, plan_run

# The harness run as `python -m cuprobe.probes`, with an audit hook that writes down which thread imported torch.
HARNESS = """
import pathlib, runpy, sys, threading
marker = pathlib.Path(sys.argv[1])
def hook(event, args):
    if event == "import" and args[0] == "torch":
        with marker.open("a") as f:
            f.write(threading.current_thread().name + "\\n")
sys.addaudithook(hook)
sys.argv = ["cuprobe.probes", *sys.argv[2:]]
runpy.run_module("cuprobe.probes", run_name="__main__", alter_sys=True)
"""
# bf16-matmul's CPU backend: a probe that runs torch cases on this machine, without a GPU.
CPU_TORCH = {"backends": ["torch-cpu"], "timing": False, "m": 16, "k": 16, "n": 16}
# narrow-matmul's kernel cases come before its torch cases: without pycuda (here) the run ends at the first of them.
KERNEL_THEN_TORCH = {"n": [5], "variants": ["unguarded", "torch"]}


class Harnessed:
    def __init__(self, done: subprocess.CompletedProcess[str], imported_on: list[str], result: dict[str, Any]) -> None:
        self.done, self.imported_on, self.result = done, imported_on, result


def _harness(folder: Path, probe: str, params: dict[str, object], *flags: str) -> Harnessed:
    folder.mkdir()
    marker, out = folder / "imported-on.txt", folder / "result.json"
    args = [sys.executable, "-c", HARNESS, str(marker), probe, "--params", json.dumps(params), "--out", str(out)]
    done = subprocess.run([*args, *flags], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    imported_on = marker.read_text().split() if marker.exists() else []
    return Harnessed(done, imported_on, json.loads(out.read_text()))


def _cases(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each case's id, verdict and observations, less its own wall time."""
    return [
        {"id": c["id"], "passed": c.get("passed"), **{k: v for k, v in c["observations"].items() if k != "seconds"}}
        for c in result["cases"]
    ]


def test_torch_is_imported_on_the_second_thread_and_the_cases_come_out_the_same(tmp_path: Path) -> None:
    plain = _harness(tmp_path / "plain", "bf16-matmul", CPU_TORCH)
    early = _harness(tmp_path / "early", "bf16-matmul", CPU_TORCH, PREFETCH_TORCH_FLAG)
    assert plain.imported_on[:1] == ["MainThread"]  # the control: without the flag the probe imports it itself
    assert early.imported_on[:1] == ["cuprobe-torch-prefetch"]
    assert early.done.returncode == plain.done.returncode == 0, early.done.stderr
    assert early.result["complete"] and plain.result["complete"]
    assert _cases(early.result) == _cases(plain.result) != []
    took = early.result["context"]["torch_prefetch"]
    assert isinstance(took["took_s"], float) and took["took_s"] > 0 and "error" not in took
    assert "torch_prefetch" not in plain.result["context"]


def test_parameters_without_torch_import_nothing_early(tmp_path: Path) -> None:
    early = _harness(tmp_path / "early", "narrow-matmul", {"n": [5], "variants": ["unguarded"]}, PREFETCH_TORCH_FLAG)
    assert early.imported_on == []
    assert "torch_prefetch" not in early.result["context"]


def test_a_run_that_ends_before_its_torch_cases_waits_for_the_import_and_ends_as_it_would_have(tmp_path: Path) -> None:
    plain = _harness(tmp_path / "plain", "narrow-matmul", KERNEL_THEN_TORCH)
    early = _harness(tmp_path / "early", "narrow-matmul", KERNEL_THEN_TORCH, PREFETCH_TORCH_FLAG)
    assert early.done.returncode == plain.done.returncode  # 69 here (no pycuda), 0 on a GPU box
    assert early.done.stderr == plain.done.stderr  # nothing printed by an import cut off as Python ended
    assert {k: early.result.get(k) for k in ("complete", "unavailable", "error")} == {
        k: plain.result.get(k) for k in ("complete", "unavailable", "error")
    }
    assert isinstance(early.result["context"]["torch_prefetch"]["took_s"], float)  # it finished before the end


@pytest.fixture
def gpu_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))


def _cmd(request: ProbeRequest, settings: Settings, workdir: Path) -> list[str]:
    workdir.mkdir()
    planned = plan_run(request, workdir=workdir, settings=settings)
    assert isinstance(planned, PlannedRun), planned
    if planned.ports is not None:
        planned.ports.release()
    return planned.cmd


@pytest.mark.parametrize(
    ("probe", "params", "tool", "early"),
    [
        ("narrow-matmul", {}, Tool.INITCHECK, True),
        ("narrow-matmul", {"variants": ["unguarded"]}, Tool.INITCHECK, True),  # the harness decides from the params
        ("narrow-linear", {}, Tool.MEMCHECK, True),
        ("bf16-matmul", {}, Tool.NONE, False),  # bare: it may time its cases
        ("command", {"argv": ["true"]}, Tool.MEMCHECK, False),  # the user's program
    ],
)
def test_the_runner_asks_for_the_early_import_under_a_sanitizer_for_probes_that_run_in_their_own_process(
    probe: str,
    params: dict[str, object],
    tool: Tool,
    early: bool,
    tmp_path: Path,
    replay_settings: Settings,
    gpu_present: None,
) -> None:
    request = ProbeRequest(probe=probe, tool=tool, params=params, confirm=False)
    assert (PREFETCH_TORCH_FLAG in _cmd(request, replay_settings, tmp_path / "on")) is early


def test_the_probe_writes_torchs_environment_only_after_the_early_import_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc's setenv beside a getenv on another thread (torch's libraries loading) is not safe: import_torch waits
    for a running early import before probes.allocator.prepare writes the environment."""
    from cuprobe.probes import prefetch, torch_env
    from cuprobe.probes.base import ProbeUnavailable, Recorder
    from cuprobe.probes.selftest import SelftestParams

    order: list[str] = []

    class Running:
        def finish(self) -> None:
            order.append("import ended")

    def prepare(*args: object) -> None:
        order.append("environment written")
        raise ProbeUnavailable("stop here")  # the rest needs CUDA

    monkeypatch.setattr(prefetch, "_started", Running())
    monkeypatch.setattr(torch_env, "prepare", prepare)
    with pytest.raises(ProbeUnavailable):
        torch_env.import_torch("cuda", Tool.INITCHECK, Recorder("selftest", Tool.INITCHECK, SelftestParams()))
    assert order == ["import ended", "environment written"]
    monkeypatch.setattr(prefetch, "_started", None)  # the control: nothing started, nothing waited for
    order.clear()
    with pytest.raises(ProbeUnavailable):
        torch_env.import_torch("cuda", Tool.INITCHECK, Recorder("selftest", Tool.INITCHECK, SelftestParams()))
    assert order == ["environment written"]
