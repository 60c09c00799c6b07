"""The dashboard in a real headless Chromium against a real API, store, Redis and Celery worker.

A job submitted over the HTTP API is watched on the Jobs page going from queued to done (the worker starts only
after the page shows it queued), its findings are opened, a finding is followed to its history, a running job's page
follows it to cancelled, and a sweep's diff is opened; without the token, or with a wrong one, the browser gets the
login page and no data. Chromium and its driver are Debian's (.ci/run installs them); with CUPROBE_REQUIRE_BROWSER=1
(CI) their absence fails these tests instead of skipping them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from cuprobe.service.models import signature_key
from tests import browser
from tests.integration.stack import Stack, wait_for
from tests.redis_dbs import claim
from tests.seed_store import seed_sweeps

TOKEN = "dashboard-browser-token"
# Generous: a loaded 2-core machine starts Chromium, a Celery worker and a probe subprocess.
WAIT_S = 120


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chrome]:
    why = browser.missing()
    if why:
        if os.environ.get("CUPROBE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the dashboard's browser tests must run here (CUPROBE_REQUIRE_BROWSER=1): {why}")
        pytest.skip(why)
    driver = browser.chrome()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str, httpx.Client]]:
    """A stack with a token and seeded sweeps; its worker is started by the test that watches a job wait for it."""
    data: Path = tmp_path_factory.mktemp("dashboard-browser")
    db = claim()
    stack = Stack(
        "dashboard",
        broker_url=db.url,
        database_url=f"sqlite:///{data / 'cuprobe.db'}",
        data_dir=data,
        CUPROBE_API_TOKEN=TOKEN,
    )
    api = stack.start_api(unserved_grace_s=0.0, registry_refresh_s=0.5)
    api.headers["Authorization"] = f"Bearer {TOKEN}"
    seed_sweeps(stack.store, sweeps=2, cases=48)  # the second has new, fixed and persisting findings
    try:
        yield stack, str(api.base_url).rstrip("/"), api
    finally:
        stack.stop()
        db.release()


def _wait(driver: Chrome) -> WebDriverWait[Chrome]:
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.25, ignored_exceptions=[StaleElementReferenceException])


def _text(driver: Chrome, css: str) -> str:
    """The element's text read in one script call: the page swaps its nodes while it follows a job, and a node found
    by one WebDriver command can be gone by the next, which Chrome reports as an unknown error, not a stale one."""
    script = "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';"
    return str(driver.execute_script(script, css))


def _has_text(element_id: str, text: str) -> Callable[[Chrome], bool]:
    return lambda d: text in _text(d, f"#{element_id}")


def _row_state(driver: Chrome, job_id: str) -> str:
    return _text(driver, f'tr[data-job="{job_id}"] .state')


def test_without_the_token_or_with_a_wrong_one_the_browser_gets_the_login_page(
    chromium: Chrome, deployment: tuple[Stack, str, httpx.Client]
) -> None:
    _stack, url, api = deployment
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "ok"}, "wait_for_worker": True}).json()
    chromium.delete_all_cookies()
    chromium.get(f"{url}/ui/jobs/{job['id']}")
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "token")))
    assert chromium.title.startswith("Log in") and "selftest" not in chromium.page_source
    chromium.find_element(By.ID, "token").send_keys("not-the-token")
    chromium.find_element(By.ID, "login-button").click()
    _wait(chromium).until(_has_text("login-message", "wrong token"))
    assert "selftest" not in chromium.page_source and "job-status" not in chromium.page_source
    chromium.add_cookie({"name": "cuprobe_session", "value": TOKEN})  # the token itself is not a login cookie
    chromium.get(f"{url}/ui/")
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "token")))
    assert "Workers" not in chromium.page_source
    chromium.delete_all_cookies()


def test_a_job_goes_from_queued_to_done_on_the_page_and_its_finding_leads_to_its_history(
    chromium: Chrome, deployment: tuple[Stack, str, httpx.Client]
) -> None:
    stack, url, api = deployment
    chromium.delete_all_cookies()
    chromium.get(f"{url}/ui/jobs?probe=selftest")
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "token")))
    chromium.find_element(By.ID, "token").send_keys(TOKEN)
    chromium.find_element(By.ID, "login-button").click()
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "job-filter")))
    assert chromium.current_url.endswith("/ui/jobs?probe=selftest")

    # No worker yet: the job waits, and the open page shows it queued.
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "violate"}, "wait_for_worker": True})
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    _wait(chromium).until(lambda d: _row_state(d, job_id) == "queued")
    stack.start_worker()
    # The page updates itself: no reload from here on.
    _wait(chromium).until(lambda d: _row_state(d, job_id) == "done")
    outcome = chromium.find_element(By.CSS_SELECTOR, f'tr[data-job="{job_id}"] .outcome').text
    assert outcome == "findings" and wait_for(api, job_id)["outcome"] == "findings"

    chromium.find_element(By.CSS_SELECTOR, f'tr[data-job="{job_id}"] a').click()
    _wait(chromium).until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.findings")))
    assert chromium.find_element(By.ID, "job-outcome").text == "findings"
    table = chromium.find_element(By.CSS_SELECTOR, "table.findings").text
    assert "expectation-violation" in table and "violate" in table
    assert "cuprobe run selftest --tool none -p behaviour=violate" in chromium.find_element(By.ID, "reproduce").text
    assert "result.json" in chromium.find_element(By.ID, "artifacts").text

    signature = api.get(f"/jobs/{job_id}/findings").json()["findings"][0]["signature"]
    chromium.find_element(By.CSS_SELECTOR, "table.findings a.history").click()
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "signature")))
    assert chromium.current_url.endswith(f"/ui/findings/{signature_key(signature)}")
    assert chromium.find_element(By.ID, "signature").text == signature
    assert int(chromium.find_element(By.ID, "seen-jobs").text) >= 1
    assert job_id[:8] in chromium.find_element(By.ID, "occurrences").text


def test_a_running_job_page_follows_it_to_cancelled(
    chromium: Chrome, deployment: tuple[Stack, str, httpx.Client]
) -> None:
    stack, url, api = deployment
    if stack.worker is None:
        stack.start_worker()
    job_id = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "hang"}}).json()["id"]
    wait_for(api, job_id, until=("running",), timeout=WAIT_S)
    chromium.get(f"{url}/ui/jobs/{job_id}")
    _wait(chromium).until(_has_text("job-state", "running"))
    assert api.post(f"/jobs/{job_id}/cancel").status_code == 200
    _wait(chromium).until(_has_text("job-state", "cancelled"))
    assert "stopped while running, on request" in chromium.find_element(By.ID, "job-message").text


def test_now_shows_the_live_worker_and_the_last_sweep_whose_diff_opens(
    chromium: Chrome, deployment: tuple[Stack, str, httpx.Client]
) -> None:
    stack, url, _api = deployment
    if stack.worker is None:
        stack.start_worker()
    chromium.get(f"{url}/ui/")
    _wait(chromium).until(_has_text("workers", "cpu-dashboard@"))
    row = next(r for r in chromium.find_elements(By.CSS_SELECTOR, "#workers tbody tr") if "cpu-dashboard@" in r.text)
    assert "alive" in row.text and "cpu.sweep" in row.text
    chromium.find_element(By.CSS_SELECTOR, "#now-diff-counts a.new").click()
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "new")))
    assert "/diff" in chromium.current_url
    new = chromium.find_element(By.ID, "new")
    link = new.find_element(By.CSS_SELECTOR, "a.mono")
    signature = link.text
    link.click()
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "seen-sweeps")))
    assert chromium.find_element(By.ID, "signature").text == signature
    assert int(chromium.find_element(By.ID, "seen-sweeps").text) >= 1


def test_in_a_narrow_window_the_pages_keep_their_width_and_their_tables_wrap(
    chromium: Chrome, deployment: tuple[Stack, str, httpx.Client]
) -> None:
    _stack, url, _api = deployment
    chromium.delete_all_cookies()
    chromium.get(f"{url}/ui/jobs")
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "token")))
    chromium.find_element(By.ID, "token").send_keys(TOKEN)
    chromium.find_element(By.ID, "login-button").click()
    _wait(chromium).until(ec.presence_of_element_located((By.ID, "job-filter")))
    size = chromium.get_window_size()
    chromium.set_window_size(480, 900)
    try:
        for path in ("/ui/", "/ui/jobs", "/ui/sweeps", "/ui/api"):
            chromium.get(f"{url}{path}")
            _wait(chromium).until(ec.presence_of_element_located((By.CSS_SELECTOR, "footer")))
            wide, window = chromium.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
            )
            over = chromium.execute_script(
                "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > "
                "document.documentElement.clientWidth + 1).slice(0, 5).map(e => e.tagName + '.' + e.className + "
                "' ' + Math.round(e.getBoundingClientRect().right))"
            )
            assert wide <= window, f"{path} is {wide} px wide in a {window} px window ({over}): it scrolls sideways"
    finally:
        chromium.set_window_size(size["width"], size["height"])
