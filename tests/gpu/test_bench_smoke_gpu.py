"""The GPU benchmarks at a small size on the GPU box, as tests/integration/test_bench_smoke.py runs the others: each
checks its own results (every case ran, findings equal across K, both confirmation runs ran), nothing is timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from tests.benches import run_bench

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "bench",
    [
        ["confirm.py", "--probe", "uninit-read", "--repeats", "1"],
        ["sweep.py", "--slots", "1", "--no-warm"],
    ],
    ids=["confirm", "sweep"],
)
def test_the_gpu_benchmark_runs_at_a_small_size(bench: list[str], settings: Settings, tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "out")]
    run_bench(bench[0], [*bench[1:], *out], env={"CUPROBE_SANITIZER_PATH": str(settings.sanitizer_path)}, timeout=1800)
