"""Helpers for probe tests: run `python -m cuprobe.probes` as the service does and read its result.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]

ProbeRun = Callable[..., tuple[int, dict[str, Any], str]]


def probe_env(**extra: str) -> dict[str, str]:
    """The environment a probe subprocess gets: this checkout first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


@pytest.fixture
def run_probe(tmp_path: Path) -> ProbeRun:
    """Run one probe in a subprocess; returns (exit code, result.json, stderr)."""

    def run(
        name: str,
        params: dict[str, Any] | str,
        tool: str = "none",
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> tuple[int, dict[str, Any], str]:
        out = tmp_path / f"{name}-{tool}.json"
        text = params if isinstance(params, str) else json.dumps(params)
        proc = subprocess.run(
            [sys.executable, "-m", "cuprobe.probes", name, "--params", text, "--out", str(out), "--tool", tool],
            cwd=ROOT,
            env=probe_env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result = json.loads(out.read_text()) if out.exists() else {}
        return proc.returncode, result, proc.stderr

    return run
