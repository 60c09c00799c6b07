"""What the service adds per job: one probe through the API and queue vs the same command run bare, side by side.

    python bench/overhead.py [--probe uninit-read] [--tool initcheck] [--params JSON] [--repeats 15] [--url URL]

Without --url it starts the embedded stack (`cuprobe up`: Valkey broker, SQLite store, workers, API) in a
temporary directory. Each repeat runs the bare command (exactly the command and environment the runner plans for
the request: service.probing.runner.plan_run) and the same request through the service (POST /jobs, then
GET /jobs/{id} until done; every --poll-s, or with --wait-s the server holds the GET until the job ends), in
alternating order. Confirmation is off on both sides (`confirm: false`): its bare re-runs are the runner's work, not
the service's, and the result reports them as `confirmation_s`.

On this machine without a GPU, CPU-capable probes measure the same path:
    python bench/overhead.py --probe selftest --tool none --repeats 15
    python bench/overhead.py --probe bf16-matmul --tool none --params '{"backends":["torch-cpu"]}' --repeats 15

A service run is split (from the job's timestamps, the result's `timing` and this script's clock) into
  submit   POST /jobs until the job row exists (created_at)
  queue    created_at -> started_at (broker delivery, Celery's task start, the claim's first read)
  pre      claim, load, gpu_lock, prepare: the worker's stages before the command starts
  run      the supervised command: spawn, run, reap (the result's duration_s; what `bare` measures)
  post     artifacts, parse, classify, confirm, scrub, pending: the worker's stages after it
  store    finished_at -> the client saw the job done (the store's write, then the poll or the held GET)
and `other` is what none of them covers. Target: the median of the per-repeat ratios service / bare <= 1.05.
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
from service.models import ProbeRequest, RunResult, Tool
from service.models.timing import STAGES
from service.probing.admission import admit
from service.probing.runner import plan_run

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = ("done", "cancelled")
TARGET_RATIO = 1.05
PRE = ("claim", "load", "gpu_lock", "prepare")
RUN = ("spawn", "run", "reap")
POST = ("artifacts", "parse", "classify", "confirm", "scrub", "pending")
SPLIT = ("submit", "queue", "pre", "run", "post", "store", "other")


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
    """The command and environment the runner would use for `request`: what a user would type."""
    planned = plan_run(request, workdir=workdir, settings=settings)
    if isinstance(planned, RunResult):
        raise SystemExit(f"{request.probe} under {request.tool} cannot run here: {planned.message}")
    return planned.cmd, planned.env


def run_bare(request: ProbeRequest, workdir: Path, settings: Settings) -> tuple[float, int, list[str]]:
    workdir.mkdir(parents=True, exist_ok=True)
    cmd, env = bare_command(request, workdir, settings)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.returncode, cmd


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def run_service(client: Client, request: ProbeRequest, poll_s: float, wait_s: float) -> dict[str, Any]:
    """Submit `request`, wait for it to end; the times on this script's clock and the ended job."""
    start = time.perf_counter()
    began = time.time()
    job = client.submit(request.model_dump(mode="json", exclude_none=True))
    while job["state"] not in TERMINAL:
        if wait_s:
            job = client.job(job["id"], wait_s=wait_s)
        else:
            time.sleep(poll_s)
            job = client.job(job["id"])
    return {"service_s": time.perf_counter() - start, "began": began, "seen": time.time(), "job": job}


def split(bare_s: float, service: dict[str, Any]) -> dict[str, float | None]:
    """Where the service's time went (SPLIT), in seconds; None where the job lacks the timestamps."""
    job = service["job"]
    result = job.get("result") or {}
    timing: dict[str, float] = result.get("timing") or {}
    if not (job.get("started_at") and job.get("finished_at") and timing):
        return dict.fromkeys(SPLIT)
    created, started, finished = _at(job["created_at"]), _at(job["started_at"]), _at(job["finished_at"])
    parts = {
        "submit": created - service["began"],
        "queue": started - created,
        "pre": sum(timing.get(s, 0.0) for s in PRE),
        "run": sum(timing.get(s, 0.0) for s in RUN),
        "post": sum(timing.get(s, 0.0) for s in POST),
        "store": service["seen"] - finished,
    }
    parts["other"] = service["service_s"] - sum(parts.values())
    return dict(parts)


def _paths_out(cmd: list[str], workdir_marker: str) -> list[str]:
    """`cmd` with each argument under a per-run directory replaced by its file name (comparable across runs)."""
    return [Path(a).name if workdir_marker in a else a for a in cmd]


def _median(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="uninit-read")
    parser.add_argument("--tool", default="initcheck")
    parser.add_argument("--params", default="{}", help="probe parameters as JSON")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--url", help="a running cuprobe API; without it the embedded stack is started")
    parser.add_argument("--token")
    parser.add_argument("--poll-s", type=float, default=0.02, help="seconds between GET /jobs/{id} (default 0.02)")
    parser.add_argument(
        "--wait-s", type=float, default=0.0, help="hold each GET up to this long until the job ends (GET ?wait_s=)"
    )
    parser.add_argument("--json-out", type=Path, help="also write the measurements here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    settings = get_settings()
    request = ProbeRequest(probe=args.probe, tool=Tool(args.tool), params=json.loads(args.params), confirm=False)
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
        # Warm-up, not counted: first imports and the first compile fill the caches both sides share.
        _, _, bare_cmd = run_bare(request, scratch / "run-warm", settings)
        warm = run_service(client, request, args.poll_s, args.wait_s)["job"]
        service_cmd = (warm.get("result") or {}).get("command") or []
        if _paths_out(service_cmd, "/attempt-") != _paths_out(bare_cmd, "/run-warm"):
            raise SystemExit(f"the service ran another command than the bare side:\n  {service_cmd}\n  {bare_cmd}")
        for i in range(args.repeats):
            order = ("bare", "service") if i % 2 == 0 else ("service", "bare")
            row: dict[str, Any] = {"repeat": i + 1, "first": order[0]}
            service: dict[str, Any] = {}
            for which in order:
                if which == "bare":
                    row["bare_s"], row["bare_rc"], _ = run_bare(request, scratch / f"run-{i}", settings)
                else:
                    service = run_service(client, request, args.poll_s, args.wait_s)
            job = service["job"]
            result = job.get("result") or {}
            row.update(
                service_s=service["service_s"],
                outcome=job["outcome"],
                findings=job.get("findings"),
                exit_code=result.get("exit_code"),
                timing=result.get("timing") or {},
                split=split(row["bare_s"], service),
            )
            rows.append(row)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return report(args, url, rows)


def report(args: argparse.Namespace, url: str, rows: list[dict[str, Any]]) -> int:
    waiting = f"GET held up to {args.wait_s:g} s" if args.wait_s else f"GET every {args.poll_s * 1000:g} ms"
    print(f"probe {args.probe} under {args.tool}, params {args.params}, {args.repeats} repeats, service {url}, "
          f"{waiting}; all times in s")
    print(f"{'#':>2} {'first':>7} {'bare':>6} {'rc':>3} {'service':>7} {'ratio':>6} {'added':>6} | "
          + " ".join(f"{p:>6}" for p in SPLIT) + "  outcome")
    for r in rows:
        added = r["service_s"] - r["bare_s"]
        cells = " ".join(f"{v:6.3f}" if v is not None else f"{'-':>6}" for v in r["split"].values())
        print(f"{r['repeat']:>2} {r['first']:>7} {r['bare_s']:6.3f} {r['bare_rc']:>3} {r['service_s']:7.3f} "
              f"{r['service_s'] / r['bare_s']:6.3f} {added:6.3f} | {cells}  {r['outcome']} ({r['findings']} findings)")
    bare = statistics.median(r["bare_s"] for r in rows)
    service = statistics.median(r["service_s"] for r in rows)
    ratio = statistics.median(r["service_s"] / r["bare_s"] for r in rows)
    medians = {p: _median([r["split"][p] for r in rows]) for p in SPLIT}
    print("median split: " + ", ".join(f"{p} {v * 1000:.1f} ms" for p, v in medians.items()))
    stages = [s for s in STAGES if any(s in r["timing"] for r in rows)]
    print("median worker stages: "
          + ", ".join(f"{s} {_median([r['timing'].get(s) for r in rows]) * 1000:.1f} ms" for s in stages))
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    print(f"median bare {bare:.3f} s, median service {service:.3f} s, added {service - bare:.3f} s; "
          f"median ratio {ratio:.3f} (target <= {TARGET_RATIO}): {verdict}")
    if args.json_out:
        args.json_out.write_text(json.dumps(
            {"rows": rows, "bare_s": bare, "service_s": service, "median_ratio": ratio, "median_split": medians},
            indent=1,
        ))
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
