"""Submit N jobs to a running cuprobe API at once, wait for all, and show from the stored results where each ran.

    python tests/gpu/drain.py --url URL [--jobs 16] [--probe narrow-matmul] [--tool initcheck] [--json-out F]

Prints one row per job (outcome, findings, the GPU UUID the worker was pinned to, the CUDA devices the probe
itself saw) and the drain time: first submission to the last job's finish, from the store's timestamps.
Exit 1 if any job did not run, saw other than exactly one GPU, or ran on a GPU other than its worker's.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuprobe.service.client import Client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--probe", default="narrow-matmul")
    parser.add_argument("--tool", default="initcheck")
    parser.add_argument("--params", default="{}")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--limit-s", type=float, default=900)
    args = parser.parse_args(argv)
    client = Client(args.url, timeout=60)
    spec = {"probe": args.probe, "tool": args.tool, "params": json.loads(args.params)}
    start = time.time()
    ids = [client.submit(spec)["id"] for _ in range(args.jobs)]
    jobs: dict[str, dict[str, Any]] = {}
    while len(jobs) < len(ids) and time.time() - start < args.limit_s:
        for job_id in ids:
            if job_id not in jobs:
                job = client.job(job_id)
                if job["state"] in ("done", "cancelled"):
                    jobs[job_id] = job
        time.sleep(0.5)
    problems = [f"{job_id}: not finished within {args.limit_s} s" for job_id in ids if job_id not in jobs]
    rows = []
    for job_id in ids:
        job = jobs.get(job_id)
        if job is None:
            continue
        result = job.get("result") or {}
        pinned = (result.get("environment") or {}).get("gpu_uuid")
        seen = (result.get("probe_context") or {}).get("cuda_devices") or {}
        rows.append(
            {
                "id": job_id,
                "outcome": job["outcome"],
                "findings": job.get("findings"),
                "worker": job.get("worker"),
                "pinned_gpu": pinned,
                "cuda_devices": seen,
                "created_at": job["created_at"],
                "started_at": job["started_at"],
                "finished_at": job["finished_at"],
            }
        )
        if job["outcome"] not in ("clean", "findings"):
            problems.append(f"{job_id}: {job['outcome']}: {job['message']}")
        if seen.get("count") != 1:
            problems.append(f"{job_id}: the probe saw {seen.get('count')} CUDA devices, not exactly one")
        elif seen["uuids"][0] != pinned:
            problems.append(f"{job_id}: the probe ran on {seen['uuids'][0]}, its worker was pinned to {pinned}")
    print(f"{'job':10} {'outcome':9} {'findings':>8} {'pinned GPU':42} {'GPU the probe saw':42} worker")
    for r in rows:
        uuids = r["cuda_devices"].get("uuids") or ["-"]
        print(f"{r['id'][:10]:10} {r['outcome']:9} {r['findings']!s:>8} {r['pinned_gpu']!s:42} "
              f"{','.join(map(str, uuids)):42} {r['worker']}")
    per_gpu = collections.Counter(r["pinned_gpu"] for r in rows)
    first = min((datetime.fromisoformat(r["created_at"]) for r in rows), default=None)
    last = max((datetime.fromisoformat(r["finished_at"]) for r in rows if r["finished_at"]), default=None)
    drain = (last - first).total_seconds() if first and last else float("nan")
    print(f"jobs per GPU: {dict(per_gpu)}")
    print(f"drain time (first submitted -> last finished, store timestamps): {drain:.2f} s for {len(rows)} jobs")
    for problem in problems:
        print(f"PROBLEM {problem}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"drain_s": drain, "per_gpu": per_gpu, "jobs": rows}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
