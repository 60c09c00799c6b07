"""What the service adds per job: one probe through the API and queue vs the bare compute-sanitizer command.

    python bench/overhead.py [--probe uninit-read] [--tool initcheck] [--repeats 5] [--url URL]

Without --url it starts the embedded stack (`cuprobe up`: Valkey broker, SQLite store, workers, API) in a
temporary directory. Each repeat runs the bare command (exactly the command line a job's result records,
under the same environment) and the same request through the service (POST /jobs, poll GET /jobs/{id}
every 20 ms until done), alternating which goes first. Target: the service adds at most 10% or 0.5 s per
job, whichever is larger. The service time is split into queue wait (created -> started), the supervised
run (the result's duration_s) and the rest (claim, parse, classify, store, poll).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service.cli.embedded import free_port
from service.client import Client
from service.config import Settings, get_settings
from service.models import ProbeRequest, Tool
from service.probing.admission import admit
from service.probing.secrets import probe_environment
from service.sanitizer.command import probe_command, sanitizer_command
from service.sanitizer.locate import find_sanitizer

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = ("done", "cancelled")


def start_stack(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`cuprobe up` on a free port with its data under `data_dir`; returns the process and the API URL."""
    port = free_port()
    env = {**os.environ, "CUPROBE_DATA_DIR": str(data_dir)}
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir / "up.log").open("wb")
    cmd = [sys.executable, "-m", "service.cli.main", "up", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(url: str, want_gpu: bool, limit_s: float = 120.0) -> dict[str, Any]:
    """Poll /health until the store and broker answer and a worker serves the queue the probe needs."""
    deadline = time.monotonic() + limit_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = httpx.get(f"{url}/health", timeout=5).json()
            queues = [q for qs in last.get("workers", {}).values() for q in qs]
            if last.get("ok") and any(q.startswith("gpu.") if want_gpu else q == "cpu" for q in queues):
                return dict(last)
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the service at {url} was not ready within {limit_s:.0f} s; last /health: {last}")


def bare_command(request: ProbeRequest, workdir: Path, settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The command a user would type: compute-sanitizer ... -- python -m probes NAME (or the probe alone)."""
    admitted = admit(request.probe, request.tool, request.params)
    tool, params = admitted.tool, admitted.params
    target = probe_command(request.probe, params, workdir / "result.json", tool, settings.python)
    if tool is Tool.NONE:
        return target, probe_environment(tool, settings)
    sanitizer = find_sanitizer(settings.sanitizer_path)
    cmd = sanitizer_command(sanitizer, tool, target, xml=workdir / "run.xml", error_exitcode=settings.error_exitcode)
    return cmd, probe_environment(tool, settings)


def run_bare(request: ProbeRequest, workdir: Path, settings: Settings) -> tuple[float, int]:
    workdir.mkdir(parents=True, exist_ok=True)
    cmd, env = bare_command(request, workdir, settings)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.returncode


def _seconds(job: dict[str, Any], a: str, b: str) -> float:
    return (datetime.fromisoformat(job[b]) - datetime.fromisoformat(job[a])).total_seconds()


def run_service(client: Client, request: ProbeRequest, poll_s: float = 0.02) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    job = client.submit(request.model_dump(mode="json", exclude_none=True))
    while job["state"] not in TERMINAL:
        time.sleep(poll_s)
        job = client.job(job["id"])
    return time.perf_counter() - start, job


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="uninit-read")
    parser.add_argument("--tool", default="initcheck")
    parser.add_argument("--params", default="{}", help="probe parameters as JSON")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--url", help="a running cuprobe API; without it the embedded stack is started")
    parser.add_argument("--token")
    parser.add_argument("--json-out", type=Path, help="also write the measurements here")
    args = parser.parse_args(argv)

    settings = get_settings()
    request = ProbeRequest(probe=args.probe, tool=Tool(args.tool), params=json.loads(args.params))
    want_gpu = admit(request.probe, request.tool, request.params).needs_gpu
    scratch = Path(tempfile.mkdtemp(prefix="cuprobe-overhead-"))
    proc = None
    url = args.url
    if url is None:
        proc, url = start_stack(scratch / "stack")
    rows: list[dict[str, Any]] = []
    try:
        wait_ready(url, want_gpu)
        client = Client(url, args.token, timeout=60)
        # Warm-up, not counted: first imports of torch and the first compile fill the caches both share.
        run_bare(request, scratch / "warm", settings)
        run_service(client, request)
        for i in range(args.repeats):
            order = ("bare", "service") if i % 2 == 0 else ("service", "bare")
            row: dict[str, Any] = {"repeat": i + 1, "first": order[0]}
            for which in order:
                if which == "bare":
                    row["bare_s"], row["bare_rc"] = run_bare(request, scratch / f"bare-{i}", settings)
                else:
                    row["service_s"], job = run_service(client, request)
                    result = job.get("result") or {}
                    row["outcome"] = job["outcome"]
                    row["findings"] = job.get("findings")
                    row["queue_s"] = _seconds(job, "created_at", "started_at") if job.get("started_at") else None
                    row["run_s"] = result.get("duration_s")
            rows.append(row)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()

    print(f"probe {args.probe} under {args.tool}, params {args.params}, {args.repeats} repeats, service {url}")
    print(f"{'#':>2} {'first':>7} {'bare s':>8} {'rc':>3} {'service s':>9} {'queue s':>8} {'run s':>7} "
          f"{'added s':>8} {'ratio':>6}  outcome")
    for r in rows:
        added = r["service_s"] - r["bare_s"]
        print(f"{r['repeat']:>2} {r['first']:>7} {r['bare_s']:8.3f} {r['bare_rc']:>3} {r['service_s']:9.3f} "
              f"{r['queue_s'] or 0:8.3f} {r['run_s'] or 0:7.3f} {added:8.3f} {r['service_s'] / r['bare_s']:6.3f}  "
              f"{r['outcome']} ({r['findings']} findings)")
    bare = statistics.median(r["bare_s"] for r in rows)
    service = statistics.median(r["service_s"] for r in rows)
    allowed = max(0.10 * bare, 0.5)
    added = service - bare
    verdict = "met" if added <= allowed else "MISSED"
    print(f"median bare {bare:.3f} s, median service {service:.3f} s, ratio {service / bare:.3f}, "
          f"added {added:.3f} s; target <= {allowed:.3f} s (max of 10% and 0.5 s): {verdict}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"rows": rows, "bare_s": bare, "service_s": service}, indent=1))
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
