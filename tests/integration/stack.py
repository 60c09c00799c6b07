"""A running cuprobe for tests: API (uvicorn in a thread, free port) and a real Celery worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.responses import JSONResponse

from cuprobe.service.api import create_app
from cuprobe.service.cli.embedded import free_port
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.probing.gpus import GpuDevice
from cuprobe.service.queue.served import ServedQueues
from cuprobe.service.worker.commands import worker_commands
from tests.redis_dbs import owned_db

REPO = Path(__file__).resolve().parents[2]
# Short limits so failure tests finish quickly; each keeps the ordering Settings checks.
TEST_ENV = {
    "CUPROBE_VISIBILITY_TIMEOUT_S": "40",
    "CUPROBE_TASK_SOFT_TIME_LIMIT_S": "30",
    "CUPROBE_TIMEOUT_S": "20",
    "CUPROBE_HEARTBEAT_S": "0.5",
    "CUPROBE_STALE_AFTER_S": "5",
    "CUPROBE_RECONCILE_INTERVAL_S": "1",
    "CUPROBE_REQUEUE_GRACE_S": "3",
    "CUPROBE_MAX_ATTEMPTS": "3",
    "CUPROBE_QUEUE_DEADLINE_S": "600",
}


def _without(app: Any, routes: set[tuple[str, str]]) -> Any:
    """`app`, answering 405 to the (method, path) requests of `routes`, as a server without those routes does."""

    async def served(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (scope["method"], scope["path"]) in routes:
            await JSONResponse({"detail": "Method Not Allowed"}, status_code=405)(scope, receive, send)
            return
        await app(scope, receive, send)

    return served


def children(pid: int) -> list[int]:
    """Direct child pids of `pid`, whichever of its threads started them (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def running(pid: int) -> bool:
    """Whether `pid` is a live process: a killed one may linger as a zombie until whoever adopted it reaps it
    (its /proc entry stays, state Z), which is not running."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
    return state not in ("Z", "X")


def still_running(pids: list[int], within_s: float = 10.0) -> list[int]:
    """The pids still running after waiting up to `within_s` for them to end (a SIGKILL is not instant on a
    loaded machine)."""
    deadline = time.monotonic() + within_s
    while (left := [pid for pid in pids if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


class Stack:
    """Settings, store, API server and worker of one test deployment."""

    def __init__(
        self, name: str, *, broker_url: str, database_url: str, data_dir: Path, **extra: str
    ) -> None:
        self.name = name
        self.env = {
            **TEST_ENV,
            "CUPROBE_BROKER_URL": broker_url,
            "CUPROBE_DATABASE_URL": database_url,
            "CUPROBE_DATA_DIR": str(data_dir),
            **extra,
        }
        self.settings = Settings(**{k.removeprefix("CUPROBE_").lower(): v for k, v in self.env.items()})
        self.store = Store(database_url)
        self.store.migrate()
        self.worker: subprocess.Popen[bytes] | None = None
        self.worker_log = data_dir / f"worker-{name}.log"
        self._servers: list[tuple[uvicorn.Server, threading.Thread]] = []
        data_dir.mkdir(parents=True, exist_ok=True)

    # --- API ---

    def start_api(
        self, served_queues: ServedQueues | None = None, without: Sequence[tuple[str, str]] = (), **overrides: Any
    ) -> httpx.Client:
        """Serve the API for these settings (with overrides) on a free port; returns a client for it. `without`:
        (method, path) routes left out, as a server from before they were added."""
        port = free_port()
        settings = self.settings.model_copy(update=overrides)
        app = create_app(settings, served_queues=served_queues)
        served: Any = _without(app, set(without)) if without else app
        server = uvicorn.Server(uvicorn.Config(served, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "API did not start"
            time.sleep(0.05)
        self._servers.append((server, thread))
        return httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    # --- worker ---

    def start_worker(
        self, concurrency: int = 2, env: dict[str, str] | None = None, gpu: GpuDevice | None = None
    ) -> subprocess.Popen[bytes]:
        """The stack's worker: on the CPU queues, or as the GPU worker of `gpu` (pinned to its uuid) at `concurrency`
        slots, whose driver is the replay's (tests/replay/gpu_worker.py); `env`: set for its processes only, over
        everything else."""
        if gpu is None:
            (command,) = worker_commands([], cpu_concurrency=concurrency, loglevel="INFO")
        else:
            (command,) = worker_commands([gpu], cpu=False, gpu_slots=concurrency, loglevel="INFO")
            assert command.argv[1:3] == ["-m", "celery"], command.argv
            command.argv[1:3] = [str(REPO / "tests" / "replay" / "gpu_worker.py")]
        argv = [a.replace("@%h", f"-{self.name}@%h") for a in command.argv]
        env = {**os.environ, **self.env, **command.env, "PYTHONPATH": str(REPO), **(env or {})}
        with open(self.worker_log, "ab") as log:
            self.worker = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + 60
        while b"ready." not in self.worker_log.read_bytes():
            assert self.worker.poll() is None, f"worker exited: {self.worker_log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "worker did not become ready"
            time.sleep(0.1)
        return self.worker

    def pool_children(self) -> list[int]:
        assert self.worker is not None
        return children(self.worker.pid)

    def stop(self) -> None:
        for server, thread in self._servers:
            server.should_exit = True
            thread.join(10)
        if self.worker and self.worker.poll() is None:
            self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(20)
            except subprocess.TimeoutExpired:
                self.worker.kill()
                self.worker.wait()
        self.store.engine.dispose()


def wait_serving(up: subprocess.Popen[bytes], api: httpx.Client, log: Path, timeout_s: float = 120) -> None:
    """Until a `cuprobe up` answers /health with a live worker; fails with its log when it exits or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if api.get("/health").json().get("workers"):
                return
        except httpx.TransportError:
            pass
        assert up.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.3)


def wait_for(
    client: httpx.Client,
    job_id: str,
    *,
    timeout: float = 60,
    until: tuple[str, ...] = ("done", "cancelled"),
) -> dict[str, Any]:
    """Poll GET /jobs/{id} until its state is in `until`."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["state"] in until:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']} after {timeout} s: {job}"
        time.sleep(0.1)


def wait_running(client: httpx.Client, job_id: str, attempt: int = 1, timeout: float = 30) -> dict[str, Any]:
    """Poll until the job runs attempt `attempt` (its worker pid is then known)."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["state"] == "running" and job["attempts"] >= attempt:
            return job
        assert job["state"] != "done", f"job ended before it was seen running: {job}"
        assert time.monotonic() < deadline, f"job {job_id} not running attempt {attempt}: {job}"
        time.sleep(0.05)


@contextmanager
def fresh_stack(factory: pytest.TempPathFactory, name: str, **env: str) -> Iterator[Stack]:
    """A Stack on a Redis database of its own (tests/redis_dbs.py), with a SQLite store in a new folder; stopped and
    its database given back after."""
    data = factory.mktemp(name)
    with owned_db() as db:
        stack = Stack(name, broker_url=db.url, database_url=f"sqlite:///{data / 'cuprobe.db'}", data_dir=data, **env)
        try:
            yield stack
        finally:
            stack.stop()

