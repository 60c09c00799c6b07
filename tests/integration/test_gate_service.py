"""`cuprobe gate` without --local: jobs through the real API, queue and worker, judged like local runs."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tests.cli_app import cli_app

SUITE = """
name = "service-gate"

[[probe]]
name = "ok"
probe = "selftest"
tool = "none"
params = { behaviour = "ok" }

[[probe]]
name = "violates"
probe = "selftest"
tool = "none"
repeats = 2
params = { behaviour = "violate" }
"""

GPU = """
[[probe]]
name = "needs-a-gpu"
probe = "bf16-matmul"
tool = "none"
params = { backends = ["torch-cuda"] }
"""


def gate(api: httpx.Client, tmp_path: Path, text: str) -> tuple[int, str]:
    suite = tmp_path / "suite.toml"
    suite.write_text(text)
    summary = tmp_path / "summary.md"
    argv = ["gate", str(suite), "--url", str(api.base_url), "--poll", "0.2", "--summary", str(summary)]
    result = CliRunner().invoke(cli_app(), argv)
    return result.exit_code, summary.read_text() if summary.exists() else result.output


def test_new_findings_through_the_service_exit_1(api: httpx.Client, tmp_path: Path) -> None:
    code, text = gate(api, tmp_path, SUITE)
    assert code == 1, text
    assert "| clean | 1 |" in text and "| findings | 2 |" in text
    assert "| new | - | violates | expectation-violation | - | - | 2/2 |" in text  # `-`: not initcheck
    # The run's three jobs share one label, and the dashboard's Now page shows them as one gate run.
    labels = {j["label"] for j in api.get("/jobs", params={"limit": 3}).json()["jobs"]}
    assert len(labels) == 1 and str(next(iter(labels))).startswith("gate:service-gate:")
    (label,) = labels
    assert len(api.get("/jobs", params={"label": label}).json()["jobs"]) == 3
    now = api.get("/ui/").text
    run = label.rsplit(":", 1)[1]
    row = now[now.index(run) :].split("</tr>")[0]
    assert [int(n) for n in re.findall(r'<span class="badge[^"]*">(\d+)</span>', row)] == [1, 2, 0]


def test_a_job_no_worker_takes_is_could_not_run_exit_3(api: httpx.Client, tmp_path: Path) -> None:
    # No GPU worker here: the bf16 job waits for the gpu queue until the suite's deadline, then is unavailable.
    code, text = gate(api, tmp_path, SUITE.replace('name = "service-gate"', 'name = "g"\ndeadline_s = 5') + GPU)
    assert code == 3, text
    assert "| needs-a-gpu | 1 | unavailable |" in text


def test_a_job_the_service_refuses_is_bad_input_exit_2(api: httpx.Client, tmp_path: Path) -> None:
    # A suppressions path is fine for --local but refused by a service (it takes a name in its own directory).
    refused = """
[[probe]]
name = "memcheck-control"
probe = "planted"
tool = "memcheck"
params = { defect = "oob" }
control = true
options = { suppressions = "ci/memcheck.supp.xml" }
"""
    code, text = gate(api, tmp_path, SUITE + refused)
    assert code == 2, text
    said = " ".join(text.split())
    assert "memcheck-control: the service refused the job: POST http://127.0.0.1:" in said
    assert "/jobs answered 422:" in said and "were cancelled" in said
