"""`cuprobe --version` and `cuprobe --help` load typer and none of what the commands need (pydantic, SQLAlchemy,
Celery, torch, the API's and the reports' libraries): each command imports those when it runs. bench/cli_startup.py
times them; its smoke size runs here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# What the service's commands use, and what start-up must not pay for.
HEAVY = (
    "pydantic",
    "pydantic_settings",
    "sqlalchemy",
    "alembic",
    "celery",
    "kombu",
    "redis",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "torch",
    "numpy",
    "lxml",
    "matplotlib",
    "jinja2",
)
# The console script's own import line, then the modules loaded by the end, as JSON on the last line.
PROGRAM = """
import json, sys
sys.argv = ["cuprobe", *json.loads(sys.argv[1])]
from cuprobe.service.cli.main import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(args)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    *said, modules = done.stdout.splitlines()
    return "\n".join([*said, done.stderr]), {name.split(".")[0] for name in json.loads(modules)}


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()], ids=["--version", "--help", "bare"])
def test_start_up_loads_nothing_a_command_needs(args: tuple[str, ...]) -> None:
    said, loaded = _loaded(*args)
    assert "cuprobe" in said
    assert not loaded & set(HEAVY), f"`cuprobe {' '.join(args)}` imported {sorted(loaded & set(HEAVY))}"


def test_version_loads_no_rich_either() -> None:
    said, loaded = _loaded("--version")
    assert said.startswith("cuprobe ") and "rich" not in loaded


def test_a_command_still_finds_what_it_imports_when_it_runs() -> None:
    said, loaded = _loaded("probes")
    assert "selftest" in said and "pydantic" in loaded


def test_the_benchmark_smoke_size_runs_every_row() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "cli_startup.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split()[0:2] for line in done.stdout.splitlines()[2:]]
    assert [" ".join(r) for r in rows] == ["python -c", "cuprobe --version", "cuprobe --help", "cuprobe run"]
