"""The confirmation's four bare re-runs in fewer processes (Settings.confirm_processes) on the real GPU: the same
verdicts and evidence as one process per re-run, and torch's poisoning allocator taking each run's poison."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, ProbeRequest, RunResult
from cuprobe.service.probing.runner import run_probe

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
# Every variant, with torch's cases in the early re-runs too, so that one process re-runs torch's cases four times.
GRID = {"variants": ["unguarded", "guarded", "torch"], "n": [5, 31, 64], "m": 32, "k": 32, "tile": 32}


def _decided(result: RunResult) -> list[tuple[object, ...]]:
    """Each finding's verdict and what was compared, less the re-runs' wall time."""
    return [
        (f.signature, f.case, f.confirmation, f.confirmation_evidence.model_dump(exclude={"bare_runs_s"}))
        for f in result.findings
        if f.confirmation_evidence is not None
    ]


@pytest.mark.parametrize(
    ("probe", "params"), [("uninit-read", {}), ("narrow-matmul", GRID)], ids=["uninit-read", "narrow-matmul"]
)
def test_fewer_processes_confirm_as_four(
    settings: Settings, workdir: Path, probe: str, params: dict[str, object]
) -> None:
    request = ProbeRequest(probe=probe, tool=Tool.INITCHECK, params=params)
    results = {
        count: run_probe(
            request, workdir=workdir / str(count), settings=settings.model_copy(update={"confirm_processes": count})
        )
        for count in (4, 2, 1)
    }
    for count, result in results.items():
        assert result.outcome.ran and result.findings, (count, result.message)
        assert all(check["ok"] for check in result.confirmation_control), (count, result.confirmation_control)
        assert all(f.confirmation is not Confirmation.UNCONFIRMED for f in result.findings), (count, result.message)
    assert _decided(results[2]) == _decided(results[4]) and _decided(results[1]) == _decided(results[4])
    verdicts = {count: sorted(str(f.confirmation) for f in r.findings) for count, r in results.items()}
    assert verdicts[1] == verdicts[2] == verdicts[4], verdicts


def test_torch_takes_each_runs_poison_in_one_process(tmp_path: Path) -> None:
    """Fresh CUDA blocks from torch hold each run's fill byte, though torch takes its allocator once a process."""
    code = textwrap.dedent(
        """
        from cuprobe.probes.base import Recorder
        from cuprobe.contract import Tool
        from cuprobe.probes.narrow_matmul import NarrowMatmulParams
        from cuprobe.probes.poison import PoisonPlan
        from cuprobe.probes.torch_env import import_torch

        for mode in ("ff", "zero", "sentinel", "ff"):
            recorder = Recorder("narrow-matmul", Tool.NONE, NarrowMatmulParams(), PoisonPlan(mode=mode))
            torch = import_torch("cuda", Tool.NONE, recorder)
            block = torch.empty(4096, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            print(mode, sorted(set(block.cpu().tolist())), recorder.result.context["poisoning_allocator"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False, timeout=240
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" [")[0] for line in lines] == ["ff", "zero", "sentinel", "ff"]
    assert [line.split("[")[1].split("]")[0] for line in lines] == ["255", "0", "165", "255"]
    assert [line.rsplit("fill ", 1)[1] for line in lines] == ["0xFF", "0x00", "0xA5", "0xFF"]
