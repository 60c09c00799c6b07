"""Artifacts: only regular files inside the job's directory are served or written, never a symlink's target."""

from __future__ import annotations

import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from cuprobe.service.api import create_app
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, JobState, Run, utcnow
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.runner import run_probe


def _job_with_workdir(settings: Settings) -> tuple[str, Path]:
    app_store = create_app(settings, reconciler=False).state.store
    job_id = uuid.uuid4().hex
    workdir = settings.data_dir / "jobs" / job_id / "attempt-1"
    workdir.mkdir(parents=True)
    now = utcnow()
    app_store.add_job(
        Job(
            id=job_id, probe="selftest", tool="none", request={}, queue="cpu", lane="gate",
            state=JobState.DONE.value, message="done", created_at=now, deadline_at=now, attempts=1,
            enqueues=1, cancel_requested=False,
        )
    )
    with app_store.session() as s:
        s.add(Run(job_id=job_id, attempt=1, worker="w", workdir=str(workdir), started_at=now))
    return job_id, workdir


def test_symlinked_run_xml_is_not_served(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'db.sqlite'}")
    job_id, workdir = _job_with_workdir(settings)
    secret = tmp_path / "outside.txt"
    secret.write_text("outside the job directory")
    (workdir / "run.xml").symlink_to(secret)
    (workdir / "stdout.txt").write_text("the probe's own output")
    client = TestClient(create_app(settings, reconciler=False))
    served = client.get(f"/jobs/{job_id}/artifacts/stdout.txt")
    assert served.status_code == 200 and served.text == "the probe's own output"  # positive control
    refused = client.get(f"/jobs/{job_id}/artifacts/run.xml")
    assert refused.status_code == 404 and "outside" not in refused.text
    assert "not a regular file" in refused.json()["error"]
    assert client.get(f"/jobs/{job_id}/artifacts").json()["artifacts"] == ["stdout.txt"]


def test_runner_replaces_a_planted_stdout_symlink_instead_of_writing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("must stay as it is")
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "stdout.txt").symlink_to(target)
    (workdir / "exit_code").symlink_to(target)
    result = run_probe(ProbeRequest(probe="selftest"), workdir=workdir, settings=Settings(timeout_s=60))
    assert result.outcome.value == "clean"
    assert target.read_text() == "must stay as it is"
    assert not (workdir / "stdout.txt").is_symlink() and (workdir / "exit_code").read_text() == "0\n"


def test_a_symlinked_attempt_folder_is_not_served(tmp_path: Path) -> None:
    """O_NOFOLLOW on the last component alone served `jobs/<id>/attempt-1` made a link to another directory."""
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'db.sqlite'}")
    job_id, workdir = _job_with_workdir(settings)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "stdout.txt").write_text("another directory's file")
    (workdir / "stdout.txt").write_text("the probe's own output")
    client = TestClient(create_app(settings, reconciler=False))
    assert client.get(f"/jobs/{job_id}/artifacts/stdout.txt").text == "the probe's own output"  # positive control
    assert client.get(f"/ui/jobs/{job_id}/artifacts/stdout.txt").text == "the probe's own output"
    workdir.rename(workdir.with_name("attempt-0"))
    workdir.symlink_to(elsewhere, target_is_directory=True)
    assert client.get(f"/jobs/{job_id}/artifacts/stdout.txt").status_code == 404
    assert client.get(f"/jobs/{job_id}/artifacts").json()["artifacts"] == []
    page = client.get(f"/ui/jobs/{job_id}/artifacts/stdout.txt")
    assert page.status_code == 404 and "another directory" not in page.text


def test_a_hard_linked_artifact_is_not_served(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'db.sqlite'}")
    job_id, workdir = _job_with_workdir(settings)
    secret = tmp_path / "data" / "secret.txt"
    secret.write_text("a file of someone else's")
    (workdir / "result.json").hardlink_to(secret)
    (workdir / "stdout.txt").write_text("the probe's own output")
    client = TestClient(create_app(settings, reconciler=False))
    assert client.get(f"/jobs/{job_id}/artifacts/stdout.txt").status_code == 200  # positive control
    refused = client.get(f"/jobs/{job_id}/artifacts/result.json")
    assert refused.status_code == 404 and "someone else" not in refused.text
    assert client.get(f"/jobs/{job_id}/artifacts").json()["artifacts"] == ["stdout.txt"]
