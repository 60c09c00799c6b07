"""matmul-throughput while sweep jobs fill a GPU worker's slots: it must wait for the GPU (no sweep job runs while it
runs) and match the idle runs within their spread. Run against a live API whose GPU worker has K > 1 slots:

    python3 tests/gpu/throughput_busy.py --url http://127.0.0.1:8766 --out DIR

Prints each job's queued/running window, the overlap check, and TFLOP/s idle vs busy; writes DIR/jobs.json.
    python3 tests/gpu/throughput_busy.py --report DIR/jobs.json    (judge a saved run again)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuprobe.service.client import Client

THROUGHPUT = {"probe": "matmul-throughput", "params": {"dtypes": ["bf16"], "shapes": [[5120, 2048, 8192]]}}
SWEEP = {"probe": "narrow-matmul", "tool": "initcheck", "lane": "sweep",
         "params": {"n": list(range(1, 17)), "variants": ["unguarded", "guarded", "torch"]}}
ENDED = {"done", "failed", "cancelled", "expired"}


def wait(client: Client, ids: list[str], limit_s: float = 300) -> list[dict]:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        jobs = [client.job(i) for i in ids]
        if all(j["state"] in ENDED for j in jobs):
            return jobs
        time.sleep(0.5)
    raise SystemExit(f"jobs not done within {limit_s} s: {[(j['id'][:8], j['state']) for j in jobs]}")


def ts(value: str | None) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else float("nan")


def tflops(job: dict) -> float:
    cases = (job.get("result") or {}).get("cases") or []
    judged = [c["observations"]["tflops"] for c in cases if c.get("observations", {}).get("judged")]
    return judged[0] if judged else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sweep-jobs", type=int, default=8)
    ap.add_argument("--report", type=Path, help="only judge a saved DIR/jobs.json (3 idle runs first)")
    args = ap.parse_args()
    if args.report:
        saved = json.loads(args.report.read_text())
        sys.exit(report(saved[:3], saved[3:]))
    if not args.url or not args.out:
        ap.error("--url and --out are needed unless --report is given")
    args.out.mkdir(parents=True, exist_ok=True)
    client = Client(args.url)
    idle = []
    for _ in range(3):
        idle += wait(client, [client.submit(THROUGHPUT)["id"]])
    sweep_ids = [client.submit(SWEEP)["id"] for _ in range(args.sweep_jobs)]
    end = time.monotonic() + 120
    while time.monotonic() < end and sum(client.job(i)["state"] == "running" for i in sweep_ids) < 2:
        time.sleep(0.2)
    running = sum(client.job(i)["state"] == "running" for i in sweep_ids)
    busy_id = client.submit(THROUGHPUT)["id"]
    print(f"throughput submitted with {running} sweep job(s) running")
    jobs = wait(client, [*sweep_ids, busy_id])
    (args.out / "jobs.json").write_text(json.dumps(idle + jobs, indent=1))
    sys.exit(report(idle, jobs))


def gpu_window(job: dict) -> tuple[float, float]:
    """When the job held the GPU: from its claim plus the stages before and including the wait for the GPU lock
    (claim, load, gpu_lock: the result's `timing`) to its end. The job's own started_at..finished_at also covers
    its wait for the lock, which is not use of the GPU."""
    timing = (job.get("result") or {}).get("timing") or {}
    waited = sum(timing.get(stage, 0.0) for stage in ("claim", "load", "gpu_lock"))
    return ts(job["started_at"]) + waited, ts(job["finished_at"])


def report(idle: list[dict], jobs: list[dict]) -> int:
    """Print the jobs' windows, the GPU overlap check and TFLOP/s idle vs busy; 0 when no sweep job held the GPU
    while the busy run did and every job ran."""
    busy = jobs[-1]
    sweeps = jobs[:-1]
    t0 = min(ts(j["created_at"]) for j in idle + jobs)
    print(f"{'job':<10} {'kind':<10} {'created':>8} {'started':>8} {'on GPU':>8} {'finished':>8}  outcome")
    for j in idle + jobs:
        kind = "throughput" if j["probe"] == "matmul-throughput" else "sweep"
        print(f"{j['id'][:8]:<10} {kind:<10} {ts(j['created_at']) - t0:8.2f} {ts(j['started_at']) - t0:8.2f} "
              f"{gpu_window(j)[0] - t0:8.2f} {ts(j['finished_at']) - t0:8.2f}  {j['outcome']}")
    b0, b1 = gpu_window(busy)
    overlap = [j["id"][:8] for j in sweeps if gpu_window(j)[0] < b1 and gpu_window(j)[1] > b0]
    waited = b0 - ts(busy["created_at"])
    print(f"busy throughput waited {waited:.2f} s for the GPU; sweep jobs holding the GPU while it did: "
          f"{overlap or 'none'}")
    idle_t = [tflops(j) for j in idle]
    print(f"TFLOP/s (bf16 5120x2048x8192): idle {[round(t, 2) for t in idle_t]} (spread {min(idle_t):.2f}-"
          f"{max(idle_t):.2f}), busy {tflops(busy):.2f}: "
          f"{'within' if min(idle_t) <= tflops(busy) <= max(idle_t) else 'OUTSIDE'} the idle spread")
    ok = not overlap and all(j["outcome"] in ("clean", "findings") for j in idle + jobs)
    return 0 if ok else 1


if __name__ == "__main__":
    main()
