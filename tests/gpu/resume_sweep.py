"""A scheduled sweep whose CPU worker process is killed while its GPU jobs run, resumed from those jobs, on a GPU box.

Starts the embedded stack (`cuprobe up`: a worker per GPU at its K and a CPU worker), runs the definition here
first as the reference (`cuprobe sweep run`'s path), then sends the scheduled sweep's task (`cuprobe.run_sweep`, as
beat does) to the CPU worker, SIGKILLs the worker process running it once all its jobs are sent, sends one
maintenance pass (`cuprobe.reconcile`, as beat does every reconcile interval) and waits for the sweep to be stored.
Prints the stored sweep's state, message and wall, how many jobs carry its label, and every case whose outcome or
findings differ from the reference. Exit 0 only when it was stored done, resumed, no job was sent twice and every
case equals the reference.
    python3 tests/gpu/resume_sweep.py [--definition FILE] [--broker redis://127.0.0.1:6379/5]
Default definition: the 384-case narrow-matmul initcheck grid (needs a GPU). On a CPU machine, a definition of
selftest cases (tool none) runs the same path.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.sweep import GRID, differences, per_case  # noqa: E402
from bench.sweep_service import wait_for_workers  # noqa: E402
from cuprobe.service.cli.embedded import embedded_stack  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.db.store import Store  # noqa: E402
from cuprobe.service.db.sweeps import SweepStore  # noqa: E402
from cuprobe.service.models.queues import CPU  # noqa: E402
from cuprobe.service.queue.celery_app import TASK_RECONCILE, TASK_RUN_SWEEP, make_celery  # noqa: E402
from cuprobe.service.queue.registry import WorkerRegistry  # noqa: E402
from cuprobe.service.sweep.adopt import sweep_label  # noqa: E402
from cuprobe.service.sweep.definition import load_definition  # noqa: E402
from cuprobe.service.sweep.execute import LocalRunner, run_sweep  # noqa: E402
from cuprobe.service.worker.gpu_slots import host_slots  # noqa: E402


def until(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--definition", type=Path, help="a sweep definition (TOML); default: the 384-case grid")
    parser.add_argument("--broker", help="a running Redis for the queues instead of an embedded Valkey")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="how long to wait for each step")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cuprobe-resume-"))
    path = args.definition or work / "grid.toml"
    if not args.definition:
        path.write_text(GRID.format(name="nightly-narrow-matmul", batch="true", last=128))
    definition = load_definition(path)
    data = work / "data"
    settings = get_settings().model_copy(update={"data_dir": data, "database_url": f"sqlite:///{data / 'cuprobe.db'}"})
    began = time.monotonic()
    reference = run_sweep(definition, LocalRunner(work / "reference", settings, host_slots(settings)))
    print(f"reference (here, K = {host_slots(settings)}): {reference.counts()} in {time.monotonic() - began:.1f} s")
    with embedded_stack(settings, quiet=True, broker=args.broker) as stack:
        wait_for_workers(WorkerRegistry(stack.settings), len(stack.devices), args.timeout_s)
        store = Store(stack.settings.database)
        sweeps = SweepStore(store)
        celery = make_celery(stack.settings)
        celery.send_task(TASK_RUN_SWEEP, args=[str(path)], queue=CPU)
        sent_at = time.monotonic()

        def all_sent() -> tuple[str, int] | None:
            """The running scheduled sweep and its job count, once the count has held for a second (the task sends
            every job before it waits for any)."""
            rows = [r for r in sweeps.list(definition.name) if r.state == "running" and r.summary.get("resume")]
            if not rows:
                return None
            count = len(store.jobs(label=sweep_label(rows[0].id), limit=100_000))
            time.sleep(1.0)
            again = len(store.jobs(label=sweep_label(rows[0].id), limit=100_000))
            return (rows[0].id, count) if count and again == count else None

        sweep_id, sent = until("the scheduled sweep to send its jobs", all_sent, args.timeout_s)
        row = sweeps.row(sweep_id)
        assert row is not None
        owner = row.summary["owner"]
        running = sum(1 for j in store.jobs(label=sweep_label(sweep_id), limit=100_000) if j.state == "running")
        os.kill(owner["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        print(
            f"sweep {sweep_id}: {sent} job(s) sent; killed its process (pid {owner['pid']}) "
            f"{killed_at - sent_at:.1f} s after the task was sent, {running} job(s) running then"
        )
        until("the killed sweep to be known as ended", lambda: sweep_id in sweeps.orphans(), args.timeout_s)
        celery.send_task(TASK_RECONCILE, queue=CPU)
        done = until(
            "the resumed sweep to be stored",
            lambda: (r := sweeps.row(sweep_id)) is not None and r.state != "running" and r,
            args.timeout_s,
        )
        stored = sweeps.get(sweep_id)
        assert stored is not None
        labelled = store.jobs(label=sweep_label(sweep_id), limit=100_000)
        print(f"stored {done.state} {time.monotonic() - killed_at:.1f} s after the kill; wall {stored.wall_s} s")
        print(f"message: {done.summary.get('message')}")
        print(f"outcomes: {stored.counts()}; jobs under its label: {len(labelled)} (sent before the kill: {sent})")
        shared = [m for p in stored.processes for m in p.messages if "on this host" in m]
        print(f"processes that decided from one set of re-runs on this host: {len(shared)} of {len(stored.processes)}")
    differ = list(differences(per_case(reference), per_case(stored)))
    for line in differ:
        print(f"DIFFERS from the reference: {line}")
    ok = done.state == "done" and str(done.summary.get("message", "")).startswith("resumed") and not differ
    ok = ok and len(labelled) == sent
    print("resumed, every case as the reference" if ok else "NOT as expected (above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
