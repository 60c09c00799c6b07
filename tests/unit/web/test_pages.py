"""Each dashboard page against a seeded store: what it shows is what the store holds."""

from __future__ import annotations

import re
import time
from html import unescape

import redis
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from cuprobe.service.db.overview import queue_loads
from cuprobe.service.db.store import FindingRow, Job
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.db.tables import SweepFindingRow, SweepRow
from cuprobe.service.models import signature_key
from cuprobe.service.queue.registry import WorkerBeat, publish, withdraw
from cuprobe.service.sweep.compare import changes as compared
from tests.unit.web.conftest import Deployment


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


def _job_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([0-9a-f]{32})">', html)


def test_jobs_list_pages_newest_first_and_filters(deployment: Deployment, open_ui: TestClient) -> None:
    store = deployment.store
    first = open_ui.get("/ui/jobs")
    assert first.status_code == 200
    ids = _job_ids(first.text)
    expected = [j.id for j in store.jobs(limit=50)]
    assert ids == expected and len(ids) == 50
    older = re.search(r'href="/ui/jobs\?([^"]+)" id="older"', first.text)
    assert older is not None
    second = open_ui.get(f"/ui/jobs?{unescape(older.group(1))}")
    assert _job_ids(second.text) == [j.id for j in store.jobs(limit=100)][50:100]
    assert 'hx-trigger="every 3s"' in first.text and 'hx-trigger="every 3s"' not in second.text  # live: page 1 only

    narrow = open_ui.get("/ui/jobs", params={"probe": "narrow-matmul", "outcome": "findings", "tool": "initcheck"})
    shown = _job_ids(narrow.text)
    assert shown == [j.id for j in store.jobs(probe="narrow-matmul", outcome="findings", tool="initcheck", limit=50)]
    assert shown and all(store.get(i).outcome == "findings" for i in shown)  # type: ignore[union-attr]

    newest = store.get(expected[10])
    assert newest is not None
    day = newest.created_at.date().isoformat()
    on_day = _job_ids(open_ui.get("/ui/jobs", params={"date": day}).text)
    assert on_day and all(store.get(i).created_at.date().isoformat() == day for i in on_day)  # type: ignore[union-attr]


def test_a_bad_filter_is_named_and_the_list_still_shows(open_ui: TestClient) -> None:
    response = open_ui.get("/ui/jobs", params={"outcome": "great", "date": "yesterday"})
    assert response.status_code == 400
    text = _text(response.text)
    assert "outcome 'great' is not one of clean, findings" in text
    assert "date 'yesterday' is not a date (YYYY-MM-DD)" in text
    assert len(_job_ids(response.text)) == 50


def test_job_page_shows_findings_message_environment_reproduce_and_artifacts(
    deployment: Deployment, open_ui: TestClient
) -> None:
    job_id = deployment.seeded.job_with_findings
    job = deployment.store.get(job_id)
    findings = deployment.store.findings(job_id)
    assert job is not None and findings
    response = open_ui.get(f"/ui/jobs/{job_id}")
    assert response.status_code == 200
    text = _text(response.text)
    assert job.message in text and "NVIDIA H200" in text and "580.159.04" in text
    for f in findings:
        assert f"/ui/findings/{signature_key(f.signature)}" in response.text
        assert f.case and f.case in text
    assert "kernels/narrow_matmul.cu:23" in text and "benign" in text
    assert "cuprobe run narrow-matmul --tool initcheck -p 'n=[" in text
    assert "hx-trigger" not in response.text  # done: nothing polls
    artifact = open_ui.get(f"/ui/jobs/{job_id}/artifacts/result.json")
    assert artifact.status_code == 200 and artifact.json()["outcome"] == "findings"
    assert artifact.headers["content-disposition"] == 'attachment; filename="result.json"'
    assert open_ui.get(f"/ui/jobs/{job_id}/artifacts/run.xml").status_code == 404


def test_a_short_job_id_redirects_to_the_full_address_and_an_unknown_one_is_404(
    deployment: Deployment, open_ui: TestClient
) -> None:
    job_id = deployment.seeded.job_with_findings
    short = open_ui.get(f"/ui/jobs/{job_id[:10]}", follow_redirects=False)
    assert short.status_code == 307 and short.headers["location"] == f"/ui/jobs/{job_id}"
    missing = open_ui.get("/ui/jobs/0000000000ffffff")
    assert missing.status_code == 404 and "no job 0000000000ffffff" in missing.text


def test_a_running_job_polls_and_its_status_asks_for_a_reload_once_ended(
    deployment: Deployment, open_ui: TestClient
) -> None:
    running = next(j for j in deployment.store.jobs(state="running"))
    page = open_ui.get(f"/ui/jobs/{running.id}")
    assert f'hx-get="/ui/jobs/{running.id}/status"' in page.text and "None yet: the job has not ended" in page.text
    assert open_ui.get(f"/ui/jobs/{running.id}/status").headers.get("HX-Refresh") is None
    done = deployment.seeded.job_with_findings
    assert open_ui.get(f"/ui/jobs/{done}/status").headers["HX-Refresh"] == "true"


def test_finding_history_counts_every_job_and_sweep_and_shows_the_source_line(
    deployment: Deployment, open_ui: TestClient
) -> None:
    key = deployment.seeded.hot_key
    with deployment.store.session() as s:
        jobs = s.scalar(select(func.count(func.distinct(FindingRow.job_id))).where(FindingRow.signature_key == key))
        first, last = s.execute(
            select(func.min(Job.created_at), func.max(Job.created_at))
            .join(FindingRow, FindingRow.job_id == Job.id)
            .where(FindingRow.signature_key == key)
        ).one()
        sweeps, sweep_first, sweep_last = s.execute(
            select(
                func.count(func.distinct(SweepFindingRow.sweep_id)),
                func.min(SweepRow.started_at),
                func.max(SweepRow.started_at),
            )
            .join(SweepRow, SweepRow.id == SweepFindingRow.sweep_id)
            .where(SweepFindingRow.signature_key == key)
        ).one()
    response = open_ui.get(f"/ui/findings/{key}")
    assert response.status_code == 200
    assert re.search(rf'id="seen-jobs">{jobs}<', response.text)
    assert re.search(rf'id="seen-sweeps">{sweeps}<', response.text)
    assert sweeps, "the hot finding of the seed is in every sweep too"
    assert f'id="first-seen">{min(first, sweep_first):%Y-%m-%d %H:%M:%S}Z<' in response.text
    assert f'id="last-seen">{max(last, sweep_last):%Y-%m-%d %H:%M:%S}Z<' in response.text
    # The source line, read from the project's own kernels/narrow_matmul.cu, is marked.
    line = re.search(r'id="source-line"><i>\s*(\d+)</i> ([^<]*)<', response.text)
    assert line is not None and line.group(1) == "23" and "w[wrow * k + kc]" in unescape(line.group(2))
    api = open_ui.get(f"/findings/{key}").json()
    assert api["jobs"]["distinct"] == jobs and api["sweeps"]["distinct"] == sweeps and api["key"] == key


def test_an_unknown_or_malformed_finding_key_is_404(open_ui: TestClient) -> None:
    assert open_ui.get("/ui/findings/0123456789abcdef").status_code == 404
    bad = open_ui.get("/ui/findings/..%2f..%2fetc")
    assert bad.status_code == 404
    assert open_ui.get("/findings/0123456789abcdef").status_code == 404
    assert open_ui.get("/findings/nothex").status_code == 422


def test_sweep_diff_page_lists_what_the_diff_says(deployment: Deployment, open_ui: TestClient) -> None:
    sweeps = SweepStore(deployment.store)
    latest = sweeps.get(deployment.sweeps[-2])
    assert latest is not None
    changes = compared(sweeps, latest)
    assert changes.new and changes.fixed and changes.persisting  # the seed makes each of them
    response = open_ui.get(f"/ui/sweeps/{latest.id}/diff")
    assert response.status_code == 200
    for part in ("new", "fixed", "persisting", "flaky", "unverified"):
        section = re.search(rf'<section id="{part}".*?</section>', response.text, re.S)
        assert section is not None
        items = getattr(changes, part)
        assert f"({len(items)})" in section.group(0)
        for item in items:
            assert f"/ui/findings/{signature_key(item.signature)}" in section.group(0)
            if item.against:  # compared with the case's last run: the page links that sweep
                assert f'in sweep <a class="mono" href="/ui/sweeps/{item.against}">' in section.group(0)
    # the seed has a finding back after a night its case could not run: it persists, compared with its last run
    assert any(item.against for item in changes.persisting)
    running = open_ui.get(f"/ui/sweeps/{deployment.sweeps[-1]}/diff")  # the seed's running sweep
    assert (
        running.status_code == 200 and "This sweep is running, not a result: there is nothing to diff" in running.text
    )
    page = open_ui.get(f"/ui/sweeps/{latest.id}")
    assert re.search(rf"<b>{len(changes.new)}</b> new", page.text)
    assert f'hx-get="/ui/sweeps/{latest.id}/plots"' in page.text
    plots = open_ui.get(f"/ui/sweeps/{latest.id}/plots")
    assert plots.status_code == 200 and "<svg" in plots.text and "out_features" in plots.text


def test_a_running_sweep_shows_its_progress(deployment: Deployment, open_ui: TestClient) -> None:
    running = deployment.sweeps[-1]
    page = open_ui.get(f"/ui/sweeps/{running}")
    assert "17 of 42 processes done" in _text(page.text) and f'hx-get="/ui/sweeps/{running}/progress"' in page.text
    assert open_ui.get(f"/ui/sweeps/{running}/progress").headers.get("HX-Refresh") is None
    listed = _text(open_ui.get("/ui/sweeps").text)
    assert "running 17/42" in " ".join(listed.split())


def test_now_shows_live_and_gone_workers_queues_gate_runs_and_the_last_sweep(
    deployment: Deployment, broker: str, open_ui: TestClient
) -> None:
    conn = redis.Redis.from_url(broker)
    now = time.time()
    alive = WorkerBeat(
        name="gpu0@box",
        hostname="box",
        pid=10,
        pids=[10],
        queues=["gpu.sm90", "gpu.sm90.sweep"],
        gpu_uuid="GPU-aaaa",
        gpu="NVIDIA H200",
        arch="sm90",
        started_at=now,
        beat_at=now,
    )
    leaving = WorkerBeat(name="cpu@box", hostname="box", pid=11, pids=[11], queues=["cpu"], started_at=now, beat_at=now)
    publish(conn, alive, 60)
    publish(conn, leaving, 60)
    time.sleep(0.3)
    assert "cpu@box" in open_ui.get("/ui/now/live").text
    withdraw(conn, leaving.name)
    time.sleep(0.3)
    page = open_ui.get("/ui/")
    assert page.status_code == 200
    cells = re.finditer(r'<td class="mono">([^<]+@box)</td>\s*<td>(.*?)</td>', page.text)
    rows = {m.group(1): m.group(2) for m in cells}
    assert "alive" in rows["gpu0@box"] and "gone" in rows["cpu@box"]
    assert "GPU-aaaa" in page.text
    # The seed's running and queued jobs: on gpu.sm90 a live worker serves them, on cpu none does now.
    loads = queue_loads(deployment.store)
    assert loads
    for load in loads:
        served = re.search(
            rf'<td class="mono">{re.escape(load.queue)}</td>\s*<td>{load.queued}</td>\s*<td>{load.running}</td>'
            r"\s*<td>(.*?)</td>",
            page.text,
        )
        assert served is not None and ("yes" if load.queue == "gpu.sm90" else "badge bad") in served.group(1)
    for label in deployment.seeded.gate_labels:
        assert label.split(":")[-1] in page.text
    sweeps = SweepStore(deployment.store)
    last = sweeps.get(deployment.sweeps[-2])
    assert last is not None
    changes = compared(sweeps, last)
    counts = re.search(r'id="now-diff-counts">(.*?)</p>', page.text, re.S)
    assert counts is not None
    for part in ("new", "fixed", "persisting", "flaky", "unverified"):
        assert f"<b>{len(getattr(changes, part))}</b> {part}" in counts.group(1)
