"""Run a bench/ script at a small size, as CI and the GPU box do: from the repository, with it on PYTHONPATH; the
script checks its own results, so a non-zero exit fails the caller with the end of its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_bench(script: str, args: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"bench/{script} {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
