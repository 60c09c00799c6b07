"""`cuprobe up` with no GPU: SQLite, an embedded Valkey child, a worker and the API; nothing else."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from cuprobe.service.cli.check import NO_GPU
from cuprobe.service.db.store import Store
from tests.check_rows import expected_exit
from tests.integration.stack import REPO, free_port, wait_for, wait_serving
from tests.processes import as_terminal_foreground

CLI = [sys.executable, "-m", "tests.cli_app"]


def test_up_runs_cpu_probes_and_says_gpu_probes_are_unavailable(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_RECONCILE_INTERVAL_S": "1",
        "PATH": "/usr/bin:/bin",
    }
    env.pop("CUPROBE_API_URL", None)  # the commands below find `up`'s --port themselves
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [*CLI, "up", "--port", str(port), "--cpu-concurrency", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
            preexec_fn=as_terminal_foreground,
        )
    try:
        api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        wait_serving(up, api, log)
        assert "no GPU here" in log.read_text() and "uninit-read" in log.read_text()
        submit = subprocess.run(
            [*CLI, "submit", "selftest", "--wait"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert submit.returncode == 0, submit.stdout + submit.stderr
        assert "clean" in submit.stdout
        gpu = api.post("/jobs", json={"probe": "uninit-read", "deadline_s": 1}).json()
        assert wait_for(api, gpu["id"], timeout=30)["outcome"] == "unavailable"
        assert (tmp_path / "data" / "cuprobe.db").exists()
        # The same process serves the dashboard, and `up` says where.
        assert f"dashboard: http://127.0.0.1:{port}/ui/" in log.read_text()
        jobs_page = api.get("/ui/jobs", params={"probe": "uninit-read"})
        assert jobs_page.status_code == 200 and gpu["id"][:8] in jobs_page.text and "unavailable" in jobs_page.text
        os.killpg(up.pid, signal.SIGINT)  # Ctrl+C in its terminal: the whole foreground process group gets it
        assert up.wait(90) == 0, log.read_text()
        said = log.read_text()
        assert f"serving; stop with Ctrl+C (or `kill {up.pid}`)" in said
        assert said.rstrip().endswith("cuprobe up: stopping workers, API and broker\ncuprobe up: stopped"), said
        for noise in ("SecurityWarning", "[queues]", "Hitting Ctrl+C again", "Cold shutdown", "starting it again"):
            assert noise not in said, said  # Celery's banner and shutdown lines are in the worker's log
        assert "[queues]" in (tmp_path / "data" / "logs" / "cpu.log").read_text()
        gpu_probes = re.search(r"GPU probes \(([^)]*)\)", said)
        assert gpu_probes is not None and "uninit-read" in gpu_probes.group(1), said
        assert "command" not in gpu_probes.group(1)  # no run at its defaults: whether it needs a GPU depends
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGTERM)  # its own session: up and its Valkey child
            up.wait(30)
    assert not (tmp_path / "data" / "serving.json").exists()  # a stopped `up` is not asked for


def test_readme_main_job_check_runs_every_probe_as_a_job_of_the_embedded_service(tmp_path: Path) -> None:
    """README command 1 on a machine without a GPU: CPU probes run for real, GPU ones end unavailable, all stored."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "250", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "cuprobe.service.cli", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert done.returncode == expected_exit(done.stdout), done.stdout + done.stderr
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") >= 6}
    assert "clean" in rows["selftest"] and "clean" in rows["gradcheck"]
    for gpu_probe in ("uninit-read", "narrow-matmul", "planted"):
        # A reason several probes share is said once, below the table, with the probes it applies to.
        said = rows[gpu_probe] if "see [" not in rows[gpu_probe] else done.stdout.split("└")[-1]
        assert "unavailable" in rows[gpu_probe] and NO_GPU in said.replace("\n", " ")
    assert "cuprobe worker" not in done.stdout and "UTC" not in done.stdout  # no queue names and times to decode
    assert "not run" in rows["command"]
    assert "could not run here (unavailable):" in done.stdout and "uninit-read" in done.stdout
    assert "every probe that ran behaved as expected: 3 clean; 8 could not run here" in done.stdout
    store = Store(f"sqlite:///{tmp_path / 'cuprobe-data' / 'cuprobe.db'}")
    jobs = {job.probe: job for job in store.jobs()}
    assert jobs["selftest"].outcome == "clean" and jobs["uninit-read"].outcome == "unavailable"
    assert "command" not in jobs  # refused with 422: nothing stored
    # GPU jobs end as soon as no worker is seen to serve their queue, not when their deadline runs out.
    assert "by its deadline" not in (jobs["uninit-read"].message or ""), jobs["uninit-read"].message


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left for its parent to read (a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _up(tmp_path: Path, *args: str, **settings: str) -> tuple[subprocess.Popen[bytes], Path, httpx.Client]:
    """`cuprobe up ARGS` with one CPU worker on a free port, its data and log (up.log) under tmp_path, these
    CUPROBE_* settings added; its own session, so that the caller can signal the whole stack."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_API_URL": f"http://127.0.0.1:{port}",
        "PATH": "/usr/bin:/bin",
        **{f"CUPROBE_{name.upper()}": value for name, value in settings.items()},
    }
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [*CLI, "up", "--port", str(port), "--cpu-concurrency", "1", *args],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True,
            preexec_fn=as_terminal_foreground,
        )
    return up, log, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)


def test_up_starts_a_worker_again_when_it_dies(tmp_path: Path) -> None:
    up, log, api = _up(tmp_path, worker_beat_s="0.5", registry_refresh_s="0.5")

    def worker_pids() -> set[int]:
        try:
            return {w["pid"] for w in api.get("/health").json().get("registry", [])}
        except httpx.TransportError:
            return set()

    try:
        deadline = time.monotonic() + 60
        while not (first := worker_pids()):
            assert up.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        (pid,) = first
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        while not (now := worker_pids()) or now == first:
            assert time.monotonic() - killed < 60, f"no new worker 60 s after the first died: {log.read_text()}"
            time.sleep(0.3)
        assert "starting it again" in log.read_text()
        job = api.post("/jobs", json={"probe": "selftest"}).json()
        assert wait_for(api, job["id"], timeout=60)["outcome"] == "clean"
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(30)


def test_up_killed_outright_leaves_no_worker_behind_and_the_next_up_shuts_its_broker_down(tmp_path: Path) -> None:
    """`up` SIGKILLed (the OOM killer, `kill -9`) cannot stop its workers, which run in sessions of their own: they
    stop themselves, instead of waiting for ever on a broker that went with it. Its broker, a plain child, is left
    running; the next `up` of the data directory shuts it down before it starts its own on the same files."""
    import redis

    up, log, api = _up(tmp_path)
    again = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                registry = api.get("/health").json().get("registry", [])
            except httpx.TransportError:
                registry = []
            if registry:
                break
            assert up.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        workers = {pid for w in registry for pid in w["pids"]}
        assert workers and all(os.path.exists(f"/proc/{pid}") for pid in workers)
        found = re.search(r"broker (redis://\S+),", log.read_text())
        assert found is not None, log.read_text()
        left_broker = int(redis.Redis.from_url(found.group(1)).info("server")["process_id"])
        up.kill()
        up.wait(30)
        killed = time.monotonic()
        while left := {pid for pid in workers if os.path.exists(f"/proc/{pid}")}:
            assert time.monotonic() - killed < 60, f"workers {left} still running 60 s after `up` was killed"
            time.sleep(0.3)
        assert os.path.exists(f"/proc/{left_broker}")  # the broker outlives a killed `up`
        again, log, api = _up(tmp_path)
        wait_serving(again, api, log)
        assert "left running on port" in log.read_text() and "is shut down first" in log.read_text()
        assert _gone(left_broker)
        job = api.post("/jobs", json={"probe": "selftest"}).json()
        assert wait_for(api, job["id"], timeout=90)["outcome"] == "clean"
    finally:
        for proc in (up, again):
            if proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)  # the broker, in up's process group
                proc.wait(30)


def test_up_starts_its_broker_again_when_it_dies_and_no_job_is_lost(tmp_path: Path) -> None:
    """The embedded Valkey killed (-9): `up` starts it again on its port and says so; a job submitted while it was
    down is stored, sent again by the reconciler, and runs; one submitted after runs as before."""

    import redis

    up, log, api = _up(tmp_path, reconcile_interval_s="1", requeue_grace_s="2")
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"broker (redis://\S+),", log.read_text())):
            assert up.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        broker = redis.Redis.from_url(found.group(1))
        while True:  # the API answers once it has started, after the broker line
            try:
                api.get("/health")
                break
            except httpx.TransportError:
                assert up.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        first = wait_for(api, api.post("/jobs", json={"probe": "selftest"}).json()["id"], timeout=90)
        assert first["outcome"] == "clean"  # the control: jobs run before the broker dies
        pid = int(broker.info("server")["process_id"])
        os.kill(pid, signal.SIGKILL)
        during = api.post("/jobs", json={"probe": "selftest"})
        assert during.status_code == 202, during.text  # stored: the store, not Redis, is the record of it
        killed = time.monotonic()
        while "the broker is back" not in log.read_text():
            assert time.monotonic() - killed < 90, f"the broker was not started again: {log.read_text()}"
            time.sleep(0.3)
        assert "stopped; starting it again" in log.read_text()
        assert int(broker.info("server")["process_id"]) != pid  # the same URL answers, from a new server
        assert wait_for(api, during.json()["id"], timeout=90)["outcome"] == "clean"
        after = api.post("/jobs", json={"probe": "selftest"}).json()
        assert wait_for(api, after["id"], timeout=90)["outcome"] == "clean"
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(30)


def test_up_on_a_port_in_use_says_so_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(REPO), "CUPROBE_DATA_DIR": str(tmp_path / "data")}
        done = subprocess.run(
            [*CLI, "up", "--port", str(port)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use; choose another with --port" in said
    assert "Traceback" not in said and "broker" not in said  # nothing was started
    assert not (tmp_path / "data").exists()


def test_check_beside_up_keeps_off_its_broker_and_a_second_up_of_the_data_directory_is_refused(tmp_path: Path) -> None:
    """`cuprobe check` in a second terminal, same data directory: its broker keeps its files elsewhere, so `up`'s
    append-only file has one writer and `up` goes on running jobs. A second `up` there is refused before anything
    starts, naming the process that serves it."""
    up, log, api = _up(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "COLUMNS": "250",
        "PATH": "/usr/bin:/bin",
    }
    try:
        wait_serving(up, api, log)
        second = subprocess.run(
            [*CLI, "up", "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=120
        )
        said = " ".join((second.stdout + second.stderr).split())
        assert second.returncode == 2, said
        assert "is served already" in said and f"held by process {up.pid}" in said and "CUPROBE_DATA_DIR" in said
        check = subprocess.run(
            [sys.executable, "-m", "cuprobe.service.cli", "check"],
            env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path,
        )
        assert check.returncode == expected_exit(check.stdout), check.stdout + check.stderr
        assert "every probe that ran behaved as expected" in check.stdout
        started = (tmp_path / "data" / "valkey" / "valkey.log").read_text().count("Valkey is starting")
        assert started == 1  # only up's server used the data directory's broker files
        job = api.post("/jobs", json={"probe": "selftest"}).json()
        assert wait_for(api, job["id"], timeout=90)["outcome"] == "clean"
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(30)
