"""The dashboard's guard: without the token or its login cookie every page is the login form (HTTP 401), never data."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cuprobe.service.web.auth import COOKIE, session_value
from tests.unit.web.conftest import TOKEN, Deployment, client


def _pages(d: Deployment) -> list[str]:
    s = d.seeded
    return [
        "/ui/",
        "/ui/now/live",
        "/ui/jobs",
        "/ui/jobs/rows",
        f"/ui/jobs/{s.job_with_findings}",
        f"/ui/jobs/{s.job_with_findings}/status",
        f"/ui/jobs/{s.job_with_findings}/artifacts/result.json",
        f"/ui/findings/{s.hot_key}",
        "/ui/sweeps",
        f"/ui/sweeps/{d.sweeps[-2]}",
        f"/ui/sweeps/{d.sweeps[-2]}/diff",
        f"/ui/sweeps/{d.sweeps[-2]}/plots",
        f"/ui/sweeps/{d.sweeps[-1]}/progress",
    ]


@pytest.mark.parametrize("cookie", [None, "", "not-the-hmac", TOKEN])
def test_every_page_without_a_valid_login_is_the_login_form(
    deployment: Deployment, guarded_ui: TestClient, cookie: str | None
) -> None:
    guarded_ui.cookies.clear()
    if cookie is not None:
        guarded_ui.cookies.set(COOKIE, cookie)  # the raw token as a cookie is not a login either
    for url in _pages(deployment):
        response = guarded_ui.get(url, follow_redirects=False)
        assert response.status_code == 401, (url, response.status_code)
        assert 'name="token"' in response.text and "Log in" in response.text, url
        for secret in (deployment.seeded.job_with_findings, deployment.sweeps[-2], "tiled_matmul", "NVIDIA H200"):
            assert secret not in response.text.replace(url, ""), (url, secret)
    guarded_ui.cookies.clear()


def test_a_wrong_bearer_token_gets_the_login_form_and_the_right_one_the_page(
    deployment: Deployment, guarded_ui: TestClient
) -> None:
    job = deployment.seeded.job_with_findings
    wrong = guarded_ui.get(f"/ui/jobs/{job}", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "tiled_matmul" not in wrong.text
    right = guarded_ui.get(f"/ui/jobs/{job}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert right.status_code == 200 and "tiled_matmul" in right.text


def test_logging_in_sets_an_httponly_cookie_that_is_not_the_token_and_opens_the_pages(
    deployment: Deployment,
) -> None:
    ui = client(deployment.settings, api_token=TOKEN)
    target = f"/ui/jobs/{deployment.seeded.job_with_findings}"
    refused = ui.post("/login", data={"token": "wrong", "next": target}, follow_redirects=False)
    assert refused.status_code == 401 and "wrong token" in refused.text
    assert COOKIE not in refused.headers.get("set-cookie", "")
    empty = ui.post("/login", data={"token": "", "next": target}, follow_redirects=False)
    assert empty.status_code == 401 and "enter the API token" in empty.text

    accepted = ui.post("/login", data={"token": TOKEN, "next": target}, follow_redirects=False)
    assert accepted.status_code == 303 and accepted.headers["location"] == target
    set_cookie = accepted.headers["set-cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=lax" in set_cookie and TOKEN not in set_cookie
    assert ui.cookies.get(COOKIE) == session_value(TOKEN) != TOKEN
    page = ui.get(target)
    assert page.status_code == 200 and "tiled_matmul" in page.text

    # The cookie opens the pages, not the JSON API: scripts keep using the bearer token.
    assert ui.get("/jobs").status_code == 401
    assert ui.get("/logout").status_code == 405  # a link or an image elsewhere cannot log anyone out
    assert ui.get(target).status_code == 200
    out = ui.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and f"{COOKIE}=" in out.headers["set-cookie"]
    assert ui.get(target).status_code == 401


def test_a_changed_token_logs_every_browser_out(deployment: Deployment) -> None:
    old = client(deployment.settings, api_token=TOKEN)
    old.post("/login", data={"token": TOKEN})
    cookie = old.cookies.get(COOKIE)
    new = client(deployment.settings, api_token="rotated-token")
    new.cookies.set(COOKIE, str(cookie))
    response = new.get("/ui/jobs")
    assert response.status_code == 401 and "the token changed" in response.text


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil.example", ""])
def test_login_only_returns_to_this_server(deployment: Deployment, target: str) -> None:
    ui = client(deployment.settings, api_token=TOKEN)
    response = ui.post("/login", data={"token": TOKEN, "next": target}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/"


def test_with_no_token_configured_the_pages_are_open(deployment: Deployment, open_ui: TestClient) -> None:
    for url in _pages(deployment):
        assert open_ui.get(url).status_code == 200, url
    assert open_ui.get("/login", follow_redirects=False).status_code == 303
    home = open_ui.get("/", follow_redirects=False)
    assert home.status_code == 307 and home.headers["location"] == "/ui/"


@pytest.mark.parametrize(
    "headers", [{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}]
)
def test_another_sites_form_cannot_log_a_browser_in_or_out(deployment: Deployment, headers: dict[str, str]) -> None:
    ui = client(deployment.settings, api_token=TOKEN)
    target = f"/ui/jobs/{deployment.seeded.job_with_findings}"
    assert ui.post("/login", data={"token": TOKEN}, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    assert ui.get(target).status_code == 200
    out = ui.post("/logout", headers=headers, follow_redirects=False)
    assert out.status_code == 403 and COOKIE not in out.headers.get("set-cookie", "")
    assert ui.get(target).status_code == 200  # still logged in
    forced = client(deployment.settings, api_token=TOKEN).post(
        "/login", data={"token": TOKEN}, headers=headers, follow_redirects=False
    )
    assert forced.status_code == 403 and COOKIE not in forced.headers.get("set-cookie", "")
    own = ui.post("/logout", headers={"Origin": str(ui.base_url).rstrip("/")}, follow_redirects=False)
    assert own.status_code == 303 and f"{COOKIE}=" in own.headers["set-cookie"]  # this site's own button works


def test_pages_and_the_api_forbid_framing_and_inline_script(deployment: Deployment) -> None:
    ui = client(deployment.settings, api_token=TOKEN)
    for path in ("/login", "/ui/jobs", "/health", "/jobs"):
        headers = ui.get(path).headers
        assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
        policy = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy
