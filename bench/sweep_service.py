"""Benchmark: a sweep run here against the same sweep run through the service, side by side in one run.

Here is `cuprobe sweep run`'s path (service/sweep/execute.py `LocalRunner`: K sanitizer processes at once, the batches
of a grid sharing one set of the confirmation's re-runs, no pools kept from an earlier sweep). Through the service is
the scheduled nightly sweep's path (`ServiceRunner`, as tasks/sweep.py runs it: planned for the live GPU workers'
slots, which they publish in the worker registry): each process a job on the sweep lane,
run by this machine's workers — the embedded stack `cuprobe up` starts (Valkey, SQLite, a worker per GPU at its K
plus a CPU worker) — the jobs of a grid sharing one set of re-runs on this host (`confirm_share`); with
`--own-reruns`, also through the service with each job confirming with its own re-runs, as before they shared. The
paths take turns, who goes first rotating each round; each row gives wall time, cases per GPU-hour, the ratio to
the local sweep, how many processes decided their findings from a shared set, how many ran in a spare process
(a warm start), and whether the per-case findings (outcome, signatures and counts) equal the first local sweep's.
Exit 1 where a case did not run or findings differ. With `--cold-jobs`, also through the service with no job marked
`warm_next`, so the GPU worker readies no spares (service/worker/warm.py): every job starts its own process.
    python bench/sweep_service.py [--definition FILE | --batch-size N] [--rounds 2] [--own-reruns] [--cold-jobs]
                                  [--broker redis://...] [--out DIR]
The default definition is the nightly narrow-matmul initcheck grid bench/sweep.py times (384 cases): it needs a GPU
(without one its cases end `unavailable`, here and through the service, and the run exits 1). `--batch-size N`:
that grid with at most N cases per process, so the service sends more jobs than its workers have slots (waves).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sweep import GRID, differences, per_case  # noqa: E402
from cuprobe.service.cli.embedded import embedded_stack  # noqa: E402
from cuprobe.service.config import get_settings  # noqa: E402
from cuprobe.service.db.store import Store  # noqa: E402
from cuprobe.service.models.sweep import Sweep  # noqa: E402
from cuprobe.service.queue.broker import enqueue  # noqa: E402
from cuprobe.service.queue.celery_app import make_celery  # noqa: E402
from cuprobe.service.queue.registry import WorkerRegistry  # noqa: E402
from cuprobe.service.queue.served import served_reader  # noqa: E402
from cuprobe.service.sweep.definition import DefinitionError, SweepDefinition, load_definition, parse_definition  # noqa: E402
from cuprobe.service.sweep.execute import LocalRunner, ServiceRunner, run_sweep  # noqa: E402
from cuprobe.service.worker.gpu_slots import host_slots, service_slots  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--definition", type=Path, help="a sweep definition (TOML); default: the 384-case grid")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both paths (default 2)")
    parser.add_argument("--worker-wait-s", type=float, default=120.0, help="how long to wait for the workers")
    parser.add_argument("--out", type=Path, help="write each sweep's JSON here")
    parser.add_argument(
        "--broker", help="a running Redis (redis://HOST:PORT/DB) for the service's queues instead of an embedded Valkey"
    )
    parser.add_argument(
        "--own-reruns", action="store_true", help="also through the service with each job's own re-runs (no ticket)"
    )
    parser.add_argument(
        "--cold-jobs", action="store_true", help="also through the service with no job marked warm_next (no spares)"
    )
    parser.add_argument("--batch-size", type=int, help="the default grid with at most this many cases per process")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: at least 1")
    if args.definition and args.batch_size:
        parser.error("--batch-size sets the default grid's: not with --definition")
    batch = f"true\nbatch_size = {args.batch_size}" if args.batch_size else "true"
    try:
        definition = (
            load_definition(args.definition)
            if args.definition
            else parse_definition(GRID.format(name="nightly-narrow-matmul", batch=batch, last=128))
        )
    except DefinitionError as exc:
        parser.error(str(exc))
    work = Path(tempfile.mkdtemp(prefix="cuprobe-sweep-service-"))
    data = work / "data"  # its own store: nothing of this machine's service is read or written
    settings = get_settings().model_copy(update={"data_dir": data, "database_url": f"sqlite:///{data / 'cuprobe.db'}"})
    k = host_slots(settings)
    print(f"definition {definition.name!r}; local K = {k}; work folder {work}", flush=True)
    rows: list[tuple[str, Sweep, float]] = []
    with embedded_stack(settings, quiet=True, broker=args.broker) as stack:
        registry = WorkerRegistry(stack.settings)
        wanted = wait_for_workers(registry, len(stack.devices), args.worker_wait_s)
        store = Store(stack.settings.database)
        print(f"workers serve: {', '.join(sorted(wanted)) or 'nothing yet'}", flush=True)
        # The service plans as the scheduled sweep does: for the live GPU workers' slots (tasks/sweep.py).
        service_k, why = service_slots(stack.settings, registry.view(max_age_s=0).workers)
        print(f"service K = {service_k} ({why})", flush=True)
        celery = make_celery(stack.settings)
        served = served_reader(registry)
        paths = ["local", "service"] + ["service-own"] * args.own_reruns + ["service-cold"] * args.cold_jobs
        for round_ in range(1, args.rounds + 1):
            shift = (round_ - 1) % len(paths)
            for path in paths[shift:] + paths[:shift]:
                name = f"{path}-{round_}"
                if path == "local":
                    runner: LocalRunner | ServiceRunner = LocalRunner(work / name, settings, k)
                else:
                    # No tickets where the jobs confirm with their own re-runs; a job for a queue no worker serves (a
                    # GPU probe here without a GPU) ends at once.
                    submitting = stack.settings.model_copy(update={"warm_starts": path != "service-cold"})
                    runner = ServiceRunner(
                        store,
                        submitting,
                        lambda job: enqueue(celery, job),
                        poll_s=0.2,
                        slots=service_k,
                        served=served,
                        share_reruns=path != "service-own",
                    )
                sweep, wall = timed(definition, runner)
                rows.append((name, sweep, wall))
                print(row(name, sweep, wall, rows), flush=True)
                if args.out:
                    args.out.mkdir(parents=True, exist_ok=True)
                    (args.out / f"{name}.json").write_text(sweep.model_dump_json())
    print(f"\n{header()}")
    for name, sweep, wall in rows:
        print(row(name, sweep, wall, rows))
    summary(rows)
    reference = per_case(rows[0][1])  # local-1: round 1 runs here first
    ran = all(c.outcome.ran for _, s, _ in rows for c in s.cases)
    differ = [f"{name}: {line}" for name, s, _ in rows for line in differences(reference, per_case(s))]
    for line in differ:
        print(f"DIFFERS from {rows[0][0]}: {line}")
    if not ran:
        print("not every case ran (see the outcomes above): nothing here is a measurement of a full sweep")
    return 0 if ran and not differ else 1


def wait_for_workers(registry: WorkerRegistry, gpus: int, timeout_s: float) -> set[str]:
    """The queues the stack's workers serve once the CPU worker and (where the stack has `gpus`) a GPU worker have
    registered, or what is served when `timeout_s` ends."""
    deadline = time.monotonic() + timeout_s
    queues: set[str] = set()
    while time.monotonic() < deadline:
        queues = registry.view().served_queues or set()
        if "cpu" in queues and (not gpus or any(q.startswith("gpu.") for q in queues)):
            return queues
        time.sleep(0.5)
    return queues


def timed(definition: SweepDefinition, runner: LocalRunner | ServiceRunner) -> tuple[Sweep, float]:
    start = time.monotonic()
    sweep = run_sweep(definition, runner)
    return sweep, time.monotonic() - start


def header() -> str:
    columns = f"{'sweep':<15}{'procs':>6}{'wall_s':>9}{'cases/GPU-hour':>16}{'vs local':>10}{'shared':>8}{'warm':>6}"
    return columns + f"{'same findings':>15}  outcomes"


def shared(sweep: Sweep) -> int:
    """How many of the sweep's runs decided their findings from a set of re-runs shared with others."""
    return sum(1 for p in sweep.processes for m in p.messages if "one set for the sweep's" in m)


def warm(sweep: Sweep) -> int:
    """How many of the sweep's runs ran in a spare process readied before their turn (a warm start)."""
    return sum(1 for p in sweep.processes for w in p.warm if w)


def row(name: str, sweep: Sweep, wall: float, rows: list[tuple[str, Sweep, float]]) -> str:
    cases = [c for c in sweep.cases if not c.added]
    local = [w for n, _, w in rows if n.startswith("local")]  # local-1 is always there
    ratio = f"{statistics.median(local) / wall:>9.2f}x"
    same = "yes" if not differences(per_case(rows[0][1]), per_case(sweep)) else "NO"  # against local-1
    outcomes = ", ".join(f"{o} {n}" for o, n in sorted(Counter(c.outcome.value for c in cases).items()))
    return (
        f"{name:<15}{len(sweep.processes):>6}{wall:>9.1f}{len(cases) / wall * 3600:>16,.0f}{ratio}{shared(sweep):>8}"
        f"{warm(sweep):>6}{same:>15}  {outcomes}"
    )


def summary(rows: list[tuple[str, Sweep, float]]) -> None:
    cases = len([c for c in rows[0][1].cases if not c.added])
    for path in ("local", "service", "service-own", "service-cold"):
        walls = [w for n, _, w in rows if n.rsplit("-", 1)[0] == path]
        if walls:
            median = statistics.median(walls)
            print(f"{path}: median wall {median:.1f} s, {cases / median * 3600:,.0f} cases per GPU-hour")


if __name__ == "__main__":
    sys.exit(main())
