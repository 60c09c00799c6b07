"""The dashboard on a machine without internet: the HTTP API page is its own (no CDN), a favicon is served, and a
cancelled job reads `cancelled`, as the CLI says."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from cuprobe.service.models import ProbeRequest, signature_key
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.queue.submit import JobSpec, submit
from tests.unit.web.conftest import Deployment

EXTERNAL = re.compile(r"""(?:src|href)=["']https?://""")


def test_the_http_api_link_opens_a_page_served_here_that_lists_every_endpoint(open_ui: TestClient) -> None:
    now = open_ui.get("/ui/")
    assert 'href="/ui/api">HTTP API</a>' in now.text
    shown = open_ui.get("/ui/api")
    assert shown.status_code == 200
    assert not EXTERNAL.search(shown.text), "the page loads something from another host"
    for method, path in (("POST", "/jobs"), ("GET", "/jobs/{job_id}"), ("POST", "/jobs/{job_id}/cancel")):
        assert f'id="{method} {path}"' in shown.text
    assert "JobRequest" in shown.text or "JobSpec" in shown.text  # what POST /jobs takes
    docs = open_ui.get("/docs", follow_redirects=False)  # FastAPI's own page loads Swagger UI from a CDN
    assert docs.status_code == 307 and docs.headers["location"] == "/ui/api"
    assert open_ui.get("/redoc").status_code == 404


def test_every_page_has_an_icon_and_the_browsers_request_for_one_is_answered(open_ui: TestClient) -> None:
    assert '<link rel="icon" href="/ui/static/favicon.svg"' in open_ui.get("/ui/jobs").text
    icon = open_ui.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")


def test_a_job_cancelled_before_it_ran_reads_cancelled_on_its_page_and_in_the_list(
    open_ui: TestClient, deployment: Deployment
) -> None:
    job = submit(JobSpec(probe="selftest", tool="none"), deployment.store, deployment.settings, lambda job: None)
    deployment.store.cancel(job.id)
    page = open_ui.get(f"/ui/jobs/{job.id}")
    assert 'id="job-outcome">cancelled</span>' in page.text
    listed = open_ui.get("/ui/jobs", params={"probe": "selftest", "state": "cancelled"})
    assert job.id[:8] in listed.text and ">cancelled</span>" in listed.text


def test_a_bare_runs_violation_reads_as_one_finding_of_its_case_with_no_noise_around_it(
    open_ui: TestClient, deployment: Deployment, tmp_path: Path
) -> None:
    store, settings = deployment.store, deployment.settings
    spec = JobSpec(probe="selftest", tool="none", params={"behaviour": "violate"})
    job = submit(spec, store, settings, lambda job: None)
    claim = store.claim(job.id, "host:1", max_attempts=3, stale_after_s=60, job_dir=str(tmp_path))
    result = run_probe(ProbeRequest(probe="selftest", tool="none", params={"behaviour": "violate"}), workdir=tmp_path)
    assert result.outcome.value == "findings" and claim.attempt == 1
    assert store.finish(job.id, claim.attempt, result)
    shown = open_ui.get(f"/ui/jobs/{job.id}").text
    assert "Findings (1)" in shown
    cases = shown.split('id="cases"')[1].split("</table>")[0]
    assert re.search(r'<td class="mono">violate</td><td>[^<]*</td><td>1</td>', cases), cases  # as the table above
    assert "not confirmed" not in shown  # nothing here is confirmed or could be: a bare run's violation
    request = shown.split('id="request"')[1].split("</pre>")[0]
    assert "null" not in request and '"behaviour":"violate"' in request.replace(" ", "").replace("&#34;", '"')
    finding = open_ui.get(f"/ui/findings/{signature_key(result.findings[0].signature)}").text
    assert "expectation-violation at -" not in finding and "<h1>expectation-violation</h1>" in finding
