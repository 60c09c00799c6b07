"""The environment fingerprint: package versions are read once, and again after an install changes sys.path."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.service.probing.environment import _package

NAME = "cuprobe-fingerprint-example"


def install(site: Path, version: str) -> None:
    """What pip leaves behind: a .dist-info directory (the old one removed on an upgrade)."""
    for old in site.glob("cuprobe_fingerprint_example-*.dist-info"):
        (old / "METADATA").unlink()
        old.rmdir()
    dist = site / f"cuprobe_fingerprint_example-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n")
    # Directory times tick coarsely (a few ms): make this install's change visible however fast the test runs.
    changed = site.stat().st_mtime_ns + 10_000_000
    os.utime(site, ns=(changed, changed))
    importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))


def test_a_package_installed_or_upgraded_while_the_worker_runs_is_recorded_at_its_new_version(site: Path) -> None:
    assert _package(NAME) is None
    install(site, "1.0")
    assert _package(NAME) == "1.0"
    assert _package(NAME) == "1.0"  # read once, answered from the cache
    install(site, "2.0")
    assert _package(NAME) == "2.0"
