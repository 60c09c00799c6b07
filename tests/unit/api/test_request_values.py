"""Request strings that would reach the sanitizer's argv: refused at the API with 422 naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cuprobe.service.api import create_app
from cuprobe.service.config import Settings

TOKEN = "t0ken-for-tests"


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        broker_url="redis://127.0.0.1:1/0",  # nothing listens: every refusal happens before the broker
        command_enabled=True,
        api_token=TOKEN,
    )
    return TestClient(create_app(settings, reconciler=False), headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"probe": "selftest", "suppressions": "/etc/shadow"}, "suppressions"),
        ({"probe": "selftest", "suppressions": "../../root/.ssh/id_rsa"}, "suppressions"),
        ({"probe": "selftest", "suppressions": "--injection-path=/tmp/x"}, "suppressions"),
        ({"probe": "selftest", "kernel_filter": ["x,kne=y"]}, "kernel_filter.0"),
        ({"probe": "command", "params": {"argv": ["/bin/true\x00--x"]}}, "params.argv.0"),
        ({"probe": "selftest", "kernel_filter": ["a\x00b"]}, "kernel_filter.0"),
        ({"probe": "selftest", "options": {"nvtx_exclude": ["--preload-library=/tmp/e.so"]}}, "options.nvtx_exclude"),
        ({"probe": "selftest", "options": {"nvtx_include": ["--injection-path=/tmp/x"]}}, "options.nvtx_include"),
        ({"probe": "command", "params": {"argv": ["/id"], "env_modifications": ["LD_PRELOAD=set:/e"]}}, "params.env"),
        ({"probe": "command", "params": {"argv": ["/bin/id"], "env": {"CUPROBE_COMMAND_TRUSTED": "1"}}}, "params.env"),
        ({"probe": "selftest", "timeout_s": "10"}, "timeout_s"),
        ({"probe": "selftest", "deadline_s": "10"}, "deadline_s"),
        ({"probe": "command", "params": {"argv": ["/bin/true"], "timeout_s": "10"}}, "params.timeout_s"),
    ],
)
def test_bad_argv_values_are_422_naming_the_field(client: TestClient, body: dict[str, object], field: str) -> None:
    response = client.post("/jobs", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


@pytest.mark.parametrize("extra", [{"kernel_filter": ["gemm"]}, {"show_backtrace": "device"}])
def test_sanitizer_only_fields_in_a_bare_job_are_refused_not_ignored(
    client: TestClient, extra: dict[str, object]
) -> None:
    response = client.post("/jobs", json={"probe": "selftest", "tool": "none", **extra})
    field = next(iter(extra))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and "bare run (tool none) would ignore it" in response.text


def test_true_or_false_for_a_number_parameter_is_refused_not_read_as_one(client: TestClient) -> None:
    response = client.post("/jobs", json={"probe": "uninit-read", "params": {"n": True}})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "params.n" and "n takes a number, not true" in response.text
