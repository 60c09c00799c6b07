"""bench/sweep_service.py on this machine: a sweep run here and the same sweep through the embedded service (its own
Valkey, SQLite and workers), side by side. Without a GPU only CPU probes run: what is checked is the bench itself —
both paths run every case, their findings agree, and a sweep whose cases cannot run here is not reported as a
measurement."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench(tmp_path: Path, definition: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "definition.toml"
    path.write_text(definition)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(REPO / "bench" / "sweep_service.py"), "--definition", str(path), "--rounds", "1", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )


def _rows(stdout: str) -> dict[str, str]:
    """The final table's rows by sweep name (each row printed once as it finishes and once in the table)."""
    named = re.compile(r"(local|service(-own|-cold)?)-\d+ ")
    return {line.split()[0]: line for line in stdout.splitlines() if named.match(line)}


@pytest.mark.parametrize("broker", ["embedded", "redis"])
def test_both_paths_run_every_case_with_the_same_findings(
    tmp_path: Path, broker: str, request: pytest.FixtureRequest
) -> None:
    # and through the service with each job's own re-runs, and with no job marked for a spare
    extra: tuple[str, ...] = ("--own-reruns", "--cold-jobs")
    if broker == "redis":  # the service's queues on a running Redis (as on the GPU box) instead of its own Valkey
        extra = ("--broker", request.getfixturevalue("redis_db").url)
    done = _bench(
        tmp_path,
        'name = "bench-cpu"\n[[entry]]\nprobe = "selftest"\ntool = "none"\ngrid = { behaviour = ["ok", "violate"] }\n',
        *extra,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    both = {"service-own-1", "service-cold-1"} if broker == "embedded" else set()
    assert set(rows) == {"local-1", "service-1"} | both
    for row in rows.values():
        # shared 0: selftest confirms nothing, so no process shares re-runs; warm 0: bare runs never warm-start
        assert row.split()[5:8] == ["0", "0", "yes"] and row.endswith("clean 1, findings 1"), row
    assert "service: median wall" in done.stdout and "cases per GPU-hour" in done.stdout


def test_a_sweep_whose_cases_cannot_run_here_is_not_a_measurement(tmp_path: Path) -> None:
    done = _bench(tmp_path, 'name = "bench-gpu"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\n')
    if "gpu." in done.stdout.split("workers serve:", 1)[-1].splitlines()[0]:
        pytest.skip("a GPU worker serves this machine: the probe runs here")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert rows["local-1"].endswith("unavailable 1") and rows["service-1"].endswith("unavailable 1"), done.stdout
    assert "not every case ran" in done.stdout


def test_a_bad_definition_is_refused_naming_the_problem(tmp_path: Path) -> None:
    done = _bench(tmp_path, 'name = "bad"\n[[entry]]\nprobe = "selftest"\n')
    assert done.returncode == 2 and "entry.0.tool: required" in done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
