"""Run a planned sweep, here (run_probe per process) or through the service (jobs on the sweep lane queues)."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from cuprobe.service.config import Settings, get_settings
from cuprobe.service.db.store import Job, Store, utcnow
from cuprobe.service.models import Backtrace, ProbeRequest, RunResult, Tool
from cuprobe.service.models.confirm_share import ConfirmShare
from cuprobe.service.models.queues import Lane
from cuprobe.service.models.sweep import CaseRepeat, ProcessRecord, Sweep, SweepCase
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.confirm import RerunPool, SharedReruns, share_groups
from cuprobe.service.probing.runner import ChildParsing, run_probe
from cuprobe.service.probing.spares import Spares
from cuprobe.service.queue.served import ServedQueues
from cuprobe.service.queue.submit import JobSpec, submit
from cuprobe.service.queue.waiting import ended, job_fields, poll, result_of_job
from cuprobe.service.sanitizer.forked import start_server
from cuprobe.service.sweep.adopt import Labelled, labelled
from cuprobe.service.sweep.attribute import attribute, control_fired, unattributed
from cuprobe.service.sweep.definition import DefinitionError, SweepDefinition
from cuprobe.service.sweep.flaky import merge_findings, merge_outcome
from cuprobe.service.sweep.own_tests import Checkout, test_processes
from cuprobe.service.sweep.plan import Process, plan
from cuprobe.service.sweep.warm_plan import warm_followed

Progress = Callable[[int, int, str], None]


class ProcessRunner(Protocol):
    """Runs probe requests and yields (slot, RunResult) as each finishes, in any order."""

    slots: int  # how many it runs at once: the planner splits batches so each has work

    def run_all(self, requests: list[ProbeRequest]) -> Iterator[tuple[int, RunResult]]: ...


class LocalRunner:
    """Up to `slots` processes at once on this machine (one GPU's K sanitizer slots), each with the record cap.

    Warm starts (settings.warm_starts): with more processes than slots, spare processes get ready while earlier
    ones run (service/probing/spares.py); `spares` is a pool the caller keeps (warm from earlier sweeps), else the
    runner keeps one for the sweep, starting no more spares than there are processes after the first K. `reruns`: a
    pool of the confirmation's re-run processes the caller keeps ready (service/probing/confirm/warm.py), which the
    re-runs the sweep's batches share take where it holds them."""

    def __init__(
        self,
        workdir: Path,
        settings: Settings | None = None,
        slots: int = 1,
        spares: Spares | None = None,
        reruns: RerunPool | None = None,
        parse_in_children: bool | None = None,
        share_reruns: bool = True,
    ) -> None:
        settings = settings or get_settings()
        self.workdir, self.slots, self.spares, self.reruns = workdir, max(1, slots), spares, reruns
        # The slots are threads of this process: past one, each run's XML is parsed in child processes, so the
        # slots' parses do not take turns on this process's interpreter lock (`parse_in_children`: bench/sweep.py's
        # comparison chooses).
        self.parse_in_children = self.slots > 1 if parse_in_children is None else parse_in_children
        self.settings = settings.model_copy(update={"max_records": settings.sweep_max_records})
        self.share_reruns = share_reruns  # off: each batch confirms with its own re-runs (bench/sweep.py's baseline)

    def run_all(self, requests: list[ProbeRequest]) -> Iterator[tuple[int, RunResult]]:
        spares = self.spares
        own = spares is None and self.settings.warm_starts and len(requests) > self.slots
        if own:
            spares = Spares(self.workdir / "spares", self.slots, budget=len(requests) - self.slots)

        # The batches of one grid share one set of the confirmation's re-runs (service/probing/confirm/shared.py).
        shared = SharedReruns(requests if self.share_reruns else [], self.settings, self.workdir, self.reruns)
        # Their parses fork their child processes from one server that imports the parser now (forked.py): a parse
        # then costs a fork, not a process that imports the parser (about 0.5 s).
        parsing = None
        if self.parse_in_children:
            server = start_server()
            parsing = ChildParsing(self.slots, server.child if server is not None else None)
        else:
            server = None

        stop = threading.Event()  # set when the sweep is interrupted: running probes killed, queued ones never run

        def run(slot: int) -> RunResult:
            return run_probe(
                requests[slot],
                workdir=self.workdir / f"slot{slot:04d}",
                settings=self.settings,
                cancel_event=stop,
                spares=spares,
                shared=shared.for_request(slot),
                child_parsing=parsing,
                # A local sweep runs as the user who wrote it: their own tests run as `gate --local` runs them.
                trusted=requests[slot].probe == "command",
            )

        # Threads: each waits on its own probe subprocess, and parses in child processes (above).
        pool = ThreadPoolExecutor(self.slots, thread_name_prefix="sweep-slot")
        try:
            futures = {pool.submit(run, slot): slot for slot in range(len(requests))}
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:  # Ctrl-C, SIGTERM, the consumer gone: stop now, not after every queued probe has run
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        else:
            pool.shutdown(wait=True)
        finally:
            shared.close()
            if server is not None:
                server.close()
            if own and spares is not None:
                spares.close()


class ServiceRunner:
    """Submits every process as a job on the sweep lane (gate jobs never wait behind it) and waits for each.
    `served` (the queues live workers serve: service/queue/served.py): a job for a queue none serves ends
    `unavailable` at once; without it (the scheduled sweep), it is sent, and the reconciler ends it `unavailable`
    if no worker for its queue appears in time (docs/service.md).

    `label` (the scheduled sweep's, `sweep:ID`): every job carries it, and a request a job of that label already
    asked for is not submitted again but waited for (service/sweep/adopt.py): run again with the same label, the
    runner resumes the sweep from its jobs."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        enqueue: Callable[[Job], Any],
        poll_s: float = 1.0,
        slots: int = 1,
        served: ServedQueues | None = None,
        label: str | None = None,
        share_reruns: bool = True,
    ) -> None:
        self.store, self.settings, self.enqueue, self.poll_s = store, settings, enqueue, poll_s
        self.share_reruns = share_reruns  # off: no tickets, each job confirms with its own (bench/sweep_service.py)
        self.slots, self.served, self.label = max(1, slots), served, label
        # The last run_all's jobs that were already under the label, and how many it sent.
        self.taken, self.sent = Labelled(), 0
        self.job_ids: dict[int, str] = {}  # the last run_all's job per request

    def specs(self, requests: list[ProbeRequest]) -> list[JobSpec]:
        """One sweep-lane job per request; the jobs of one grid carry one ticket, so that on each host they share one
        set of the confirmation's re-runs (confirm/host.py). With a label the tickets are named after it, so the
        same requests get the same tickets when the sweep is resumed. Jobs a later job like them follows past the
        first wave are marked `warm_next`: the worker readies a spare for it (service/worker/warm.py)."""
        tickets: dict[int, ConfirmShare] = {}
        sweep = hashlib.sha256(self.label.encode()).hexdigest()[:16] if self.label else uuid.uuid4().hex[:16]
        for number, group in enumerate(share_groups(requests, self.settings) if self.share_reruns else []):
            try:  # a grid admission would refuse (too many cases for one run, say): each job keeps its own
                admit(group.lead.probe, group.lead.tool, group.merged)
            except BadRequest:
                continue
            ticket = ConfirmShare(key=f"{sweep}-{number}", params=group.merged, members=len(group.members))
            tickets.update(dict.fromkeys(group.members, ticket))
        extra = {"lane": Lane.SWEEP, "label": self.label}
        followed = warm_followed(requests, self.slots) if self.settings.warm_starts else set()
        return [
            JobSpec.model_validate(
                {**request.model_dump(), **extra, "confirm_share": tickets.get(slot), "warm_next": slot in followed}
            )
            for slot, request in enumerate(requests)
        ]

    def run_all(self, requests: list[ProbeRequest]) -> Iterator[tuple[int, RunResult]]:
        specs = self.specs(requests)
        found = labelled(self.store, self.label, specs, self.settings) if self.label else Labelled()
        pending = {job_id: slot for slot, job_id in found.found.items()}
        for slot, spec in enumerate(specs):
            if slot not in found.found:
                pending[submit(spec, self.store, self.settings, self.enqueue, self.served).id] = slot
        self.taken, self.sent = found, len(specs) - len(found.found)
        self.job_ids = {slot: job_id for job_id, slot in pending.items()}

        def finished(job: Job | None) -> bool:
            return job is None or ended(job.state)

        for job_id, job in poll(pending, self.store.get, finished, poll_s=self.poll_s):
            slot = pending[job_id]
            request = requests[slot]
            fields = job_fields(job) if job is not None else None
            findings = self.store.findings(job_id) if job is not None else []
            tool = request.tool or Tool.NONE
            yield slot, result_of_job(fields, findings, probe=request.probe, tool=tool, params=request.params)


# initcheck signatures need only the device location; host backtraces cost more than half of a batched
# narrow-matmul run (H200: 21.6 s -> 9.3 s for 6,624 records; docs/sweep.md). Other tools keep them: memcheck's
# API-error and leak signatures name the first user host frame.
SWEEP_BACKTRACE: dict[str, Backtrace] = {"initcheck": "device"}


def requests_of(processes: list[Process]) -> list[tuple[Process, ProbeRequest]]:
    """One request per process per repeat, in plan order."""
    return [
        (
            p,
            ProbeRequest(
                probe=p.probe,
                tool=p.tool,
                params=p.params,
                timeout_s=p.timeout_s,
                show_backtrace=SWEEP_BACKTRACE.get(p.tool),
                options=p.options,
            ),
        )
        for p in processes
        for _ in range(p.repeats)
    ]


def run_sweep(
    definition: SweepDefinition,
    runner: ProcessRunner,
    *,
    sweep_id: str | None = None,
    progress: Progress | None = None,
    started: datetime | None = None,
    checkout: Checkout | None = None,
) -> Sweep:
    """Run every planned process (each `repeats` times), attribute findings to cases, merge the repeats. `started`:
    when the sweep began, if before this call (a resumed sweep: its wall time counts from then). `checkout`: the
    built repository the definition's [[test]] entries run in (own_tests.check_out)."""
    clock = time.monotonic() - ((utcnow() - started).total_seconds() if started else 0.0)
    started = started or utcnow()
    processes = plan(definition, runner.slots)
    if definition.test:
        if checkout is None:
            raise DefinitionError(f"sweep {definition.name}: its [[test]] entries need the [repo] checked out")
        processes += test_processes(definition, checkout.path, len(processes))
    slots = requests_of(processes)
    results: dict[int, list[RunResult]] = {p.index: [] for p in processes}
    for done, (slot, result) in enumerate(runner.run_all([r for _, r in slots]), start=1):
        process = slots[slot][0]
        results[process.index].append(result)
        if progress:
            progress(done, len(slots), f"{process.probe}/{process.tool} ({len(process.cases)} case(s))")
    sweep = assemble(
        definition.name, processes, results, sweep_id or uuid.uuid4().hex, started, time.monotonic() - clock
    )
    return sweep.model_copy(update={"source": checkout.source}) if checkout is not None else sweep


def assemble(
    name: str,
    processes: list[Process],
    results: dict[int, list[RunResult]],
    sweep_id: str,
    started: Any,
    wall_s: float,
) -> Sweep:
    """The Sweep from each process's results: per-case attribution, then repeats merged."""
    records, cases = [], []
    for process in processes:
        runs = results[process.index]
        per_case: dict[str, list[CaseRepeat]] = {c.key: [] for c in process.cases}
        for result in runs:
            for key, repeat in attribute(process, result).items():
                per_case[key].append(repeat)
        for case in process.cases:
            outcome, flaky, message = merge_outcome(per_case[case.key])
            cases.append(
                SweepCase(
                    key=case.key,
                    entry=case.entry,
                    probe=case.probe,
                    tool=case.tool,
                    point=case.point,
                    probe_case=case.probe_case,
                    control=case.control,
                    added=case.added,
                    setup=case.setup,
                    process=process.index,
                    batched=process.batched,
                    reason=process.reason,
                    outcome=outcome,
                    outcomes=[r.outcome for r in per_case[case.key]],
                    message=message,
                    flaky=flaky,
                    truncated=any(r.truncated for r in per_case[case.key]),
                    findings=merge_findings(per_case[case.key]),
                    observations=next((r.observations for r in reversed(per_case[case.key]) if r.observations), {}),
                )
            )
        stray = sorted({s for r in runs if process.batched for s in unattributed(r)})
        records.append(
            ProcessRecord(
                index=process.index,
                probe=process.probe,
                tool=process.tool,
                params=process.params,
                batched=process.batched,
                reason=process.reason,
                cases=len(process.cases),
                control=process.control,
                control_fired=[control_fired(process, r) for r in runs] if process.batched else [],
                extra_cases=process.extra_cases,
                outcomes=[r.outcome for r in runs],
                messages=[r.message for r in runs]
                + ([f"{len(stray)} finding(s) in no case's allocations: {stray[0]}"] if stray else []),
                durations_s=[r.duration_s for r in runs],
                stalls=[len(r.stalls) for r in runs],
                warm=[r.warm_start for r in runs],
                stages=[r.timing for r in runs],
                truncated=any(r.truncated for r in runs),
            )
        )
    versioned = next((r for rs in results.values() for r in rs if r.sanitizer_version), None)
    first = versioned or next((r for rs in results.values() for r in rs), None)
    return Sweep(
        id=sweep_id,
        definition=name,
        state="done",
        started_at=started,
        finished_at=utcnow(),
        wall_s=round(wall_s, 3),
        sanitizer_version=versioned.sanitizer_version if versioned else None,
        driver=first.environment.driver if first else None,
        environment=first.environment.model_dump() if first else {},
        processes=records,
        cases=cases,
    )
