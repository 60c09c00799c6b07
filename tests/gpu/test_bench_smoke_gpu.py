"""The GPU benchmarks at a small size on the GPU box, as tests/integration/test_bench_smoke.py runs the others: each
checks its own results (every case ran, findings equal across K, both confirmation runs ran), nothing is timed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.service.config import Settings

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "bench",
    [
        ["confirm.py", "--probe", "uninit-read", "--repeats", "1"],
        ["sweep.py", "--slots", "1", "--no-warm"],
    ],
    ids=["confirm", "sweep"],
)
def test_the_gpu_benchmark_runs_at_a_small_size(bench: list[str], settings: Settings, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CUPROBE_SANITIZER_PATH": str(settings.sanitizer_path)}
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / bench[0]), *bench[1:], "--out", str(tmp_path / "out")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"bench/{' '.join(bench)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
