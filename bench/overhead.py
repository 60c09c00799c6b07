"""What the service adds per job: one probe through the API and queue vs the same command run bare, side by side.

    python bench/overhead.py [--probe uninit-read] [--tool initcheck] [--params JSON] [--repeats 15]
                             [--clients held,poll] [--url URL] [--baseline-url URL]

Without --url it starts the embedded stack (`cuprobe up`: Valkey broker, SQLite store, workers, API) in a
temporary directory. Each repeat runs the bare command (exactly the command and environment the runner plans for
the request: service.probing.runner.plan_run) and the same request through the service once per client (POST /jobs,
then `held`: GET /jobs/{id}?wait_s= answered when the job ends, as `cuprobe submit --wait` waits; `poll`: GET
/jobs/{id} every --poll-s), in an order that rotates every repeat. --baseline-url adds another running service (e.g.
the previous version's `cuprobe up`) to the same rotation, waited on by polling. Confirmation is off on every side
(`confirm: false`): its bare re-runs are the runner's work, not the service's, and a result reports them as
`confirmation_s`.

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
and `other` is what none of them covers. Target: the median of the per-repeat ratios service / bare <= 1.05, for
each client; the exit status is 0 when every client of --url meets it. CI runs `--probe selftest --tool none
--repeats 1 --smoke` (tests/integration/test_bench_smoke.py): every run must end clean, as the bare one did; no target.
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

from cuprobe.service.cli.embedded import free_port
from cuprobe.service.client import Client
from cuprobe.service.config import Settings, get_settings
from cuprobe.service.models import ProbeRequest, RunResult, Tool
from cuprobe.service.models.timing import STAGES
from cuprobe.service.probing.admission import admit
from cuprobe.service.probing.runner import PlannedRun, plan_run

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = ("done", "cancelled")
TARGET_RATIO = 1.05
PRE = ("claim", "load", "gpu_lock", "prepare")
RUN = ("spawn", "run", "reap")
POST = ("artifacts", "parse", "classify", "confirm", "scrub", "pending")
SPLIT = ("submit", "queue", "pre", "run", "post", "store", "other")
CLIENTS = ("held", "poll")
HELD_S = 30.0


def start_stack(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`cuprobe up` on a free port with its data under `data_dir`; returns the process and the API URL."""
    port = free_port()
    env = {**os.environ, "CUPROBE_DATA_DIR": str(data_dir)}
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir / "up.log").open("wb")
    cmd = [sys.executable, "-m", "cuprobe.service.cli.main", "up", "--port", str(port)]
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


def bare_command(request: ProbeRequest, workdir: Path, settings: Settings) -> PlannedRun:
    """The command and environment the runner would use for `request`, with its block of sanitizer ports held
    (release it after the run): what a user would type."""
    planned = plan_run(request, workdir=workdir, settings=settings)
    if isinstance(planned, RunResult):
        raise SystemExit(f"{request.probe} under {request.tool} cannot run here: {planned.message}")
    return planned


def run_bare(request: ProbeRequest, workdir: Path, settings: Settings) -> tuple[float, int, list[str]]:
    workdir.mkdir(parents=True, exist_ok=True)
    planned = bare_command(request, workdir, settings)
    try:
        start = time.perf_counter()
        done = subprocess.run(
            planned.cmd, env=planned.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        return time.perf_counter() - start, done.returncode, planned.cmd
    finally:
        if planned.ports is not None:
            planned.ports.release()


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def run_service(client: Client, request: ProbeRequest, how: str, poll_s: float) -> dict[str, Any]:
    """Submit `request` and wait for it to end (`held` or `poll`); the times on this script's clock and the job."""
    start = time.perf_counter()
    began = time.time()
    job = client.submit(request.model_dump(mode="json", exclude_none=True))
    while job["state"] not in TERMINAL:
        if how == "held":
            job = client.job(job["id"], wait_s=HELD_S)
        else:
            time.sleep(poll_s)
            job = client.job(job["id"])
    return {"service_s": time.perf_counter() - start, "began": began, "seen": time.time(), "job": job}


def split(service: dict[str, Any]) -> dict[str, float | None]:
    """Where the service's time went (SPLIT), in seconds; None where the job lacks the timestamps or the stage
    timings (a service older than the result's `timing`: its `run` is the result's duration_s)."""
    job = service["job"]
    result = job.get("result") or {}
    timing: dict[str, float] = result.get("timing") or {}
    parts: dict[str, float | None] = dict.fromkeys(SPLIT)
    if not (job.get("started_at") and job.get("finished_at")):
        return parts
    created, started, finished = _at(job["created_at"]), _at(job["started_at"]), _at(job["finished_at"])
    parts.update(submit=created - service["began"], queue=started - created, store=service["seen"] - finished)
    if timing:
        parts.update(
            pre=sum(timing.get(s, 0.0) for s in PRE),
            run=sum(timing.get(s, 0.0) for s in RUN),
            post=sum(timing.get(s, 0.0) for s in POST),
        )
        parts["other"] = service["service_s"] - sum(v for v in parts.values() if v is not None)
    else:
        parts["run"] = result.get("duration_s")
    return parts


def _paths_out(cmd: list[str], workdir_marker: str) -> list[str]:
    """`cmd` with each argument under a per-run directory replaced by its file name and the sanitizer's leased
    ports left out (comparable across runs)."""
    out: list[str] = []
    for arg in cmd:
        if out and out[-1] in ("--port", "--max-connections"):
            out[-1] += " N"
            continue
        out.append(Path(arg).name if workdir_marker in arg else arg)
    return out


def _median(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="uninit-read")
    parser.add_argument("--tool", default="initcheck")
    parser.add_argument("--params", default="{}", help="probe parameters as JSON")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--clients", default="held", help="how the service side waits: held, poll or held,poll")
    parser.add_argument("--poll-s", type=float, default=0.02, help="seconds between GETs of the poll client")
    parser.add_argument("--url", help="a running cuprobe API; without it the embedded stack is started")
    parser.add_argument("--token")
    parser.add_argument(
        "--baseline-url", help="another running cuprobe API measured in the same rotation (polled every --poll-s)"
    )
    parser.add_argument("--json-out", type=Path, help="also write the measurements here")
    parser.add_argument(
        "--smoke", action="store_true", help="judge no target, only that every run ran (CI's small size)"
    )
    args = parser.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if not clients or any(c not in CLIENTS for c in clients):
        parser.error(f"--clients: a comma-separated list of {', '.join(CLIENTS)}, got {args.clients!r}")

    settings = get_settings()
    request = ProbeRequest(probe=args.probe, tool=Tool(args.tool), params=json.loads(args.params), confirm=False)
    want_gpu = admit(request.probe, request.tool, request.params).needs_gpu
    scratch = Path(tempfile.mkdtemp(prefix="cuprobe-overhead-"))
    planned = bare_command(request, scratch / "plan", settings)  # a probe that cannot run here stops here
    if planned.ports is not None:
        planned.ports.release()
    proc = None
    url = args.url
    if url is None:
        proc, url = start_stack(scratch / "stack")
    rows: list[dict[str, Any]] = []
    try:
        wait_ready(url, want_gpu)
        client = Client(url, args.token, timeout=60)
        baseline = Client(args.baseline_url, args.token, timeout=60) if args.baseline_url else None
        if args.baseline_url:
            wait_ready(args.baseline_url, want_gpu)
        # Warm-up, not counted: first imports and the first compile fill the caches every side shares.
        _, _, bare_cmd = run_bare(request, scratch / "run-warm", settings)
        for how in clients:
            warm = run_service(client, request, how, args.poll_s)["job"]
        if baseline is not None:
            run_service(baseline, request, "poll", args.poll_s)
        service_cmd = (warm.get("result") or {}).get("command") or []
        if _paths_out(service_cmd, "/attempt-") != _paths_out(bare_cmd, "/run-warm"):
            raise SystemExit(f"the service ran another command than the bare side:\n  {service_cmd}\n  {bare_cmd}")
        sides = ["bare", *clients, *(["baseline"] if baseline is not None else [])]
        for i in range(args.repeats):
            order = sides[i % len(sides) :] + sides[: i % len(sides)]
            row: dict[str, Any] = {"repeat": i + 1, "order": order}
            for which in order:
                if which == "bare":
                    row["bare_s"], row["bare_rc"], _ = run_bare(request, scratch / f"run-{i}", settings)
                    continue
                if which == "baseline":
                    assert baseline is not None
                    service = run_service(baseline, request, "poll", args.poll_s)
                else:
                    service = run_service(client, request, which, args.poll_s)
                job = service["job"]
                result = job.get("result") or {}
                row[which] = {
                    "service_s": service["service_s"],
                    "outcome": job["outcome"],
                    "findings": job.get("findings"),
                    "exit_code": result.get("exit_code"),
                    "timing": result.get("timing") or {},
                    "split": split(service),
                }
            rows.append(row)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return report(args, url, [*clients, *(["baseline"] if baseline is not None else [])], rows)


def report(args: argparse.Namespace, url: str, clients: list[str], rows: list[dict[str, Any]]) -> int:
    print(f"probe {args.probe} under {args.tool}, params {args.params}, {args.repeats} repeats, service {url}; "
          f"clients: held (GET held until the job ends), poll (GET every {args.poll_s * 1000:g} ms)"
          + (f", baseline ({args.baseline_url}, polled)" if args.baseline_url else "") + "; times in s")
    bare = statistics.median(r["bare_s"] for r in rows)
    summary: dict[str, Any] = {"bare_s": bare}
    met = True
    for how in clients:
        print(f"-- {how}")
        print(f"{'#':>2} {'bare':>6} {'rc':>3} {'service':>7} {'ratio':>6} {'added':>6} | "
              + " ".join(f"{p:>6}" for p in SPLIT) + "  outcome")
        for r in rows:
            s = r[how]
            cells = " ".join(f"{v:6.3f}" if v is not None else f"{'-':>6}" for v in s["split"].values())
            print(f"{r['repeat']:>2} {r['bare_s']:6.3f} {r['bare_rc']:>3} {s['service_s']:7.3f} "
                  f"{s['service_s'] / r['bare_s']:6.3f} {s['service_s'] - r['bare_s']:6.3f} | {cells}  "
                  f"{s['outcome']} ({s['findings']} findings)")
        service = statistics.median(r[how]["service_s"] for r in rows)
        ratio = statistics.median(r[how]["service_s"] / r["bare_s"] for r in rows)
        medians = {p: _median([r[how]["split"][p] for r in rows]) for p in SPLIT}
        stages = [st for st in STAGES if any(st in r[how]["timing"] for r in rows)]
        stage_medians = {st: _median([r[how]["timing"].get(st) for r in rows]) for st in stages}
        print("median split: " + ", ".join(f"{p} {v * 1000:.1f} ms" for p, v in medians.items()))
        print("median worker stages: " + ", ".join(f"{st} {v * 1000:.1f} ms" for st, v in stage_medians.items()))
        verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
        met = met and (verdict == "met" or how == "baseline")
        print(f"{how}: median bare {bare:.3f} s, median service {service:.3f} s, added {service - bare:.3f} s; "
              f"median ratio {ratio:.3f} (target <= {TARGET_RATIO}): {verdict}")
        summary[how] = {"service_s": service, "median_ratio": ratio, "median_split": medians,
                        "median_stages": stage_medians, "verdict": verdict}
    if args.json_out:
        args.json_out.write_text(json.dumps({"args": vars(args) | {"json_out": str(args.json_out)},
                                             "rows": rows, **summary}, indent=1))
    if args.smoke:  # too few repeats on a shared machine to judge the target: every run must have run, as bare did
        ran = all(r["bare_rc"] == 0 and r[how]["outcome"] == "clean" for r in rows for how in clients)
        print(f"smoke: every run {'clean, as bare' if ran else 'NOT clean, or bare failed'}")
        return 0 if ran else 1
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
