"""The dashboard on a machine without internet: the HTTP API page is its own (no CDN), a favicon is served, and a
cancelled job reads `cancelled`, as the CLI says."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

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
