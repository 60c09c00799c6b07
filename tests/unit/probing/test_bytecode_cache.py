"""Probe processes keep Python's bytecode in cuprobe's cache, so a site-packages without bytecode (installed with
--no-compile, or read-only) is compiled once, not once per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.probing.secrets import probe_environment


def test_a_probe_process_writes_its_bytecode_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as in many container images (and on this machine)
    request = ProbeRequest(probe="selftest", tool=Tool.NONE, params={"behaviour": "ok"})
    result = run_probe(request, workdir=tmp_path / "run", settings=Settings())

    assert result.outcome is Outcome.CLEAN, result.message
    compiled = {p.name.split(".")[0] for p in (tmp_path / "cache" / "pycache").rglob("*.pyc")}
    assert {"selftest", "contract", "registry"} <= compiled


def test_a_prefix_of_the_users_own_is_kept(tmp_path: Path) -> None:
    own = {"PATH": "/usr/bin", "PYTHONPYCACHEPREFIX": "/elsewhere"}
    assert probe_environment(Tool.NONE, Settings(), source=own)["PYTHONPYCACHEPREFIX"] == "/elsewhere"
