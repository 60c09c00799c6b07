"""GPU tests run only on the GPU box (tests/gpu/*.sh); elsewhere they are skipped, never passed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.probing.environment import gpu_facts
from cuprobe.service.sanitizer.locate import candidates


def _sanitizers() -> list[Path]:
    found = [path for _, path in candidates(None) if path.is_file()]
    return list(dict.fromkeys(p.resolve() for p in found))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_facts()[0] is not None and _sanitizers():
        return
    skip = pytest.mark.skip(
        reason="needs an NVIDIA GPU and compute-sanitizer: run tests/gpu/core.sh on the GPU box"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(
    params=_sanitizers() or [Path("/nonexistent/compute-sanitizer")], ids=lambda p: p.parent.parent.name
)
def settings(request: pytest.FixtureRequest) -> Settings:
    return Settings(sanitizer_path=request.param, timeout_s=300)


@pytest.fixture
def workdir(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A run's folder; copied to $CUPROBE_GPU_KEEP/<test id> afterwards so real artifacts become test data."""
    yield tmp_path
    keep = os.environ.get("CUPROBE_GPU_KEEP")
    if keep:
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)
        shutil.copytree(tmp_path, Path(keep) / name, dirs_exist_ok=True)
