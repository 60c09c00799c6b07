"""The confirmation stage: re-run an initcheck run's cases bare with poisoned memory and decide each finding."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cuprobe.contract import ProbeResult, Tool, is_confirm_control
from cuprobe.probes import registry
from cuprobe.probes.base import Probe
from cuprobe.probes.confirm_control import CASES as CONTROL_CASES
from cuprobe.probes.confirm_control import CHECKED_READERS, HIDDEN_WRITER
from cuprobe.probes.kinds import HOST_API_UNINITIALIZED
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, ConfirmationEvidence, Finding, Outcome, ProbeRequest, RunResult
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.confirmation import POISON_RUNS, BareRun, decide, load_bare_run
from cuprobe.service.probing.environment import PROJECT_ROOT
from cuprobe.service.probing.launch import read_probe_result
from cuprobe.service.probing.secrets import probe_environment, untimed_schedule
from cuprobe.service.probing.spares import hand_over, move_artifacts
from cuprobe.service.sanitizer.command import probe_command
from cuprobe.service.sanitizer.flagged import FlaggedMemory
from cuprobe.service.sanitizer.parse import ParseResult
from cuprobe.service.sanitizer.supervise import Supervised, supervise
from cuprobe.service.sanitizer.supervise import watch as watch_started

if TYPE_CHECKING:
    from cuprobe.service.probing.warm_reruns import RerunPool  # which imports this module's re-run command

CONFIRM_DIR = "confirm"
LATE_DIR = "confirm-late"  # the re-runs of flagged cases the early ones left out (the cases that import torch)
# compute-sanitizer 2026.x tracks the writes of kernels a filter excludes unless told not to; 2025.x has no
# such option (and did not track them).
TRACK_FILTERED_SINCE = 2026
HOST_API_REASON = (
    "a host API call (a copy to the host) read this memory after the case's kernels ran; the bare re-runs snapshot a "
    "case's memory before its reading kernel, so they cannot tell whether a kernel initcheck did not see wrote it"
)
NOT_PLANTED = (
    "the run's own kernel filters need compute-sanitizer 2026.x to track the writes of the kernels they leave out, "
    "so the blind-spot control's excluded write is tracked as well"
)


def confirming(request: ProbeRequest, tool: Tool, settings: Settings) -> bool:
    """Whether this run confirms its findings: initcheck, confirmation on, and a probe that can poison."""
    enabled = request.confirm if request.confirm is not None else settings.confirm
    return tool is Tool.INITCHECK and enabled and poison_refusal(request) is None


def poison_refusal(request: ProbeRequest) -> str | None:
    """Why the request's probe cannot poison its memory with the request's parameters, or None."""
    probe = registry.get(request.probe)
    try:
        params = probe.Params.model_validate(request.params)
    except ValueError:  # admission refuses such parameters before anything runs
        return probe.unpoisonable_reason
    return probe.poison_refusal(params)


def refuse_unconfirmable(request: ProbeRequest, tool: Tool, settings: Settings) -> None:
    """BadRequest where the confirmation could not check itself: an NVTX include filter leaves the confirmer's
    control kernels (launched outside the user's ranges) unchecked, so every such run would end could-not-run."""
    if confirming(request, tool, settings) and request.options.nvtx_include:
        raise BadRequest(
            "options",
            "nvtx_include would leave the confirmation's control kernels unchecked (they run outside your NVTX "
            "ranges): filter with kernel_name, or turn the confirmation off for this run (cuprobe run --no-confirm, "
            "\"confirm\": false in a job, CUPROBE_CONFIRM=0 for a suite or sweep)",
        )


def _tracks_filtered(version: str | None) -> bool:
    try:
        return int((version or "").split(".")[0]) >= TRACK_FILTERED_SINCE
    except ValueError:
        return False


def user_filters(request: ProbeRequest) -> bool:
    """Whether the run's own options leave some of the program's kernels unchecked (kernel or NVTX filters)."""
    return bool(request.kernel_filter or request.options.filters_kernels)


def blind_spot_planted(version: str | None, filtered: bool) -> bool:
    """Whether the blind-spot control's write is hidden from initcheck in this run. 2025.x never tracks the writes
    of a kernel its filters leave out; 2026.x does unless told not to, and telling it not to would hide the writes of
    the user's own filtered kernels too, so that initcheck reports reads of memory they wrote (captured:
    tests/data/captures/2026.4.0.0/probe_narrow-matmul_initcheck_kernel_guarded). Where the user filters, 2026.x keeps
    tracking, and the control's hidden write must come out seen: no finding."""
    return not (filtered and _tracks_filtered(version))


def control_options(version: str | None, kernel_filter: list[str], filtered: bool) -> list[str]:
    """Sanitizer options for the confirmer's control: its writer unchecked, its readers checked (`kernel_filter`:
    the user's include filters; `filtered`: whether any filter of theirs leaves kernels unchecked)."""
    options = [f"--kernel-name-exclude=kns={HIDDEN_WRITER}"]
    if kernel_filter:
        options.append(f"--kernel-name=kns={CHECKED_READERS}")
    if _tracks_filtered(version) and not filtered:  # hides the writer's writes; blind_spot_planted says why not more
        options += ["--initcheck-track-filtered-global-memory", "no"]
    return options


def confirmation_summary(findings: list[Finding]) -> str:
    """`confirmed: 1 consequential, 2 benign, 0 blind-spot, 0 unconfirmed` over initcheck findings."""
    counts = {c: 0 for c in Confirmation}
    for finding in findings:
        if finding.confirmation is not None and not finding.fallout:
            counts[finding.confirmation] += 1
    return "confirmed: " + ", ".join(f"{n} {c.value}" for c, n in counts.items())


Watch = dict[str, list[str]] | None  # case id -> buffers to snapshot; None: every buffer (`--watch all`)


def rerun_command(
    probe: str,
    params: dict[str, object],
    out: Path,
    mode: str,
    watch: Watch,
    python: str | None,
    then: Sequence[tuple[str, Path]] = (),
) -> list[str]:
    """A bare re-run: the probe's cases and the confirmer's control, fresh memory poisoned with `mode`, snapshotting
    the buffers `watch` names (None: every buffer); `then`, (poison, result path) pairs: the re-runs that follow it
    in the same process, once it has completed."""
    cmd = probe_command(probe, params, out, Tool.NONE, python)
    cmd += ["--poison", mode, "--watch", "all" if watch is None else json.dumps(watch, sort_keys=True)]
    for then_mode, then_out in then:
        cmd += ["--then", f"{then_mode}={then_out}"]
    return [*cmd, "--confirm-control"]


def rerun_environment(settings: Settings) -> dict[str, str]:
    """A bare re-run's environment: the probe's allowlisted one, and how it waits for the GPU."""
    return probe_environment(Tool.NONE, settings) | untimed_schedule(settings)


Run = tuple[str, str]  # a re-run: its label and poison (POISON_RUNS)


def dealt(runs: Sequence[Run], processes: int) -> list[list[Run]]:
    """`runs` dealt in turn into at most `processes` processes (Settings.confirm_processes), in their order within
    each: at 2, POISON_RUNS's two 0xFF runs land in different processes, so determinism is still checked across two."""
    count = max(1, min(processes, len(runs)))
    return [list(runs[i::count]) for i in range(count)]


def _why_not(done: Supervised, probe: ProbeResult | None, unreadable: str | None, limit: float) -> str | None:
    """Why a process's run gave no complete result (None: it ended well; `unreadable`: why its result.json could
    not be read, if so)."""
    if done.cancelled:
        return "cancelled"
    if done.timed_out:
        return f"timed out after {limit:g} s"
    if done.returncode != 0:
        said = (probe.unavailable or probe.error) if probe else None
        tail = [line for line in done.stderr.tail_text().splitlines() if line.strip()]
        return f"exited {done.returncode}: {said or (tail[-1] if tail else unreadable or 'no message')}"
    return None


def _bare_runs(
    request: ProbeRequest,
    params: dict[str, object],
    group: list[Run],
    watch: Watch,
    settings: Settings,
    workdir: Path,
    cancel: threading.Event,
    folder: str = CONFIRM_DIR,
    warm: RerunPool | None = None,
) -> list[BareRun]:
    """The re-runs of `group`, one after another in one bare process, each writing its result in its own folder."""
    outs = [workdir / folder / label.replace("#", "-") / "result.json" for label, _ in group]
    for out in outs:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
    then = [(mode, out) for (_, mode), out in zip(group[1:], outs[1:], strict=True)]
    cmd = rerun_command(request.probe, params, outs[0], group[0][1], watch, settings.python, then)
    limit = (request.timeout_s or settings.timeout_s) * len(group)
    done = None
    if warm is not None and watch is None and not then:  # only the early re-runs, which watch every buffer, are warm
        done = _warm_run(warm, request.probe, group[0][1], params, limit, cancel, outs[0])
    if done is None and cancel.is_set():  # stopped before it began: start nothing
        cancelled = zip(group, outs, strict=True)
        return [load_bare_run(label, mode, None, "cancelled", out) for (label, mode), out in cancelled]
    if done is None:
        done = supervise(
            cmd,
            timeout_s=limit,
            max_output_bytes=settings.max_output_bytes,
            env=rerun_environment(settings),
            cwd=PROJECT_ROOT,
            cancel=cancel,
            nice=settings.confirm_nice,
        )
    runs: list[BareRun] = []
    for (label, mode), out in zip(group, outs, strict=True):
        (out.parent / "stdout.txt").write_text(done.stdout.text())  # the process's, in each of its re-runs' folders
        (out.parent / "stderr.txt").write_text(done.stderr.text())
        probe, unreadable = read_probe_result(out)
        why = _why_not(done, probe, unreadable, limit)
        before = next((run for run in runs if not run.ok), None)
        if before is not None and probe is None:
            why = f"not run: {before.label}, before it in its process, did not complete ({before.message})"
        run = load_bare_run(label, mode, probe, why or unreadable, out, done.duration_s)
        run.warm = done.warm
        runs.append(run)
    return runs


def _warm_run(
    pool: RerunPool,
    probe: str,
    mode: str,
    params: dict[str, object],
    limit: float,
    cancel: threading.Event,
    out: Path,
) -> Supervised | None:
    """The re-run in a warm process of the pool, its files moved to where the cold one writes them; None where the
    pool holds none for it, or the one it held died before taking its parameters (the re-run then starts cold)."""
    warm = pool.take(probe, mode)
    if warm is None:
        return None
    if (pool.after_s > 0 and cancel.wait(pool.after_s)) or cancel.is_set():
        warm.discard()
        return None
    since = time.monotonic()
    if not hand_over(warm.fifo, warm.alive, json.dumps(params, sort_keys=True), cancel.is_set):
        warm.discard()
        return None
    done = watch_started(warm.started, since=since, timeout_s=limit, cancel=cancel)
    move_artifacts(warm.folder, out.parent)
    shutil.rmtree(warm.folder, ignore_errors=True)
    done.warm = True
    return done


class Reruns:
    """Bare re-runs of a run's cases with poisoned memory, in Settings.confirm_processes processes running side by
    side in their own threads (each process dies with the thread that started it). They are independent bare
    processes and no timing is read from them, so their wall time is the slowest one's (mostly interpreter and
    library start-up).

    Started `early` (beside the sanitizer run, before its findings are known: docs/confirmation.md), the sentinel
    run snapshots every buffer (`watch=None`); started late, only the flagged ones."""

    def __init__(
        self,
        request: ProbeRequest,
        params: dict[str, object],
        watch: Watch,
        settings: Settings,
        workdir: Path,
        runs: tuple[Run, ...] = POISON_RUNS,
        folder: str = CONFIRM_DIR,
        warm: RerunPool | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.shared_by = 1  # how many runs decide their findings from these (a sweep's batches: confirm_shared.py)
        self.where = ""  # where the runs that share them are, for the message ("": this process)
        self._ends: list[float] = []  # each process's end (list.append: safe from the pool's threads)
        self._cancel = threading.Event()
        self._labels = [label for label, _ in runs]
        # A caller's ready pool holds one process per poison: its re-runs stay one a process.
        groups = dealt(runs, len(runs) if warm is not None else settings.confirm_processes)
        self._pool = ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="confirm")
        self._pending = [
            self._pool.submit(
                self._timed, request, params, group, watch, settings, workdir, self._cancel, folder, warm
            )
            for group in groups
        ]

    def _timed(self, *args: Any) -> list[BareRun]:
        runs = _bare_runs(*args)
        self._ends.append(time.monotonic())
        return runs

    def results(self) -> dict[str, BareRun]:
        """Every re-run, once all have ended, in the order they were asked for."""
        try:
            ran = {run.label: run for future in self._pending for run in future.result()}
            return {label: ran[label] for label in self._labels}
        finally:
            self._pool.shutdown(wait=True)

    @property
    def spent_s(self) -> float:
        """From the first start to the last end."""
        return round(max(0.0, max(self._ends, default=self.started) - self.started), 3)

    def close(self) -> None:
        """Stop whatever still runs (a run with nothing to confirm) and wait for the threads."""
        self._cancel.set()
        self._pool.shutdown(wait=True)


class EarlyReruns(Protocol):
    """Re-runs started before the run's findings are known: its own (Reruns), or a set it shares with a sweep's other
    batches in this process (confirm_shared.py) or its other jobs on this host (confirm_host.py)."""

    @property
    def shared_by(self) -> int: ...

    @property
    def where(self) -> str: ...

    @property
    def spent_s(self) -> float: ...

    def results(self) -> dict[str, BareRun]: ...

    def close(self) -> None: ...


def start_early(
    request: ProbeRequest, tool: Tool, params: dict[str, object], settings: Settings, workdir: Path
) -> Reruns | None:
    """The re-runs started beside the sanitizer run, when this run confirms and early starts are on (re-running only
    the flagged cases needs the findings first: those start after the run)."""
    if not settings.confirm_early or not confirming(request, tool, settings):
        return None
    if not registry.get(request.probe).reruns_early:
        return None
    return Reruns(request, early_params(request.probe, params), None, settings, workdir)


def early_params(probe_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """What the early re-runs run: `params` less the cases that import torch (Probe.without_torch). Importing torch
    and setting up its CUDA state was about 2 s of each re-run of the 384-case grid on the H200, for cases that held
    no finding (docs/confirmation.md, "The cases that import torch"); a flagged case the early re-runs left out is
    re-run after the sanitizer run (confirm_findings)."""
    probe = registry.get(probe_name)
    try:
        model = probe.Params.model_validate(params)
    except ValueError:  # admission refuses such parameters; the re-runs would report the same
        return params
    cut = probe.without_torch(model)
    return params if cut is None else cut.model_dump(mode="json")


def narrowed_params(probe: Probe[Any], params: dict[str, Any], cases: set[str]) -> dict[str, Any] | None:
    """`params` cut down to the cases `cases` need (Probe.narrowed), as the request's JSON; None where the probe
    cannot cut them or nothing would be left out."""
    try:
        model = probe.Params.model_validate(params)
    except ValueError:
        return None
    cut = probe.narrowed(model, cases)
    if cut is None:
        return None
    narrowed: dict[str, Any] = cut.model_dump(mode="json")
    return narrowed if narrowed != model.model_dump(mode="json") else None


def not_rerun(plan: dict[str, list[str]], runs: dict[str, BareRun]) -> set[str]:
    """The flagged cases (`plan`'s) that completed re-runs did not run: those the early re-runs were not asked for
    (early_params). Empty where a re-run failed: its findings are unconfirmed with its reason."""
    if not runs or not all(run.ok for run in runs.values()):
        return set()
    ran = set.intersection(*(run.cases for run in runs.values()))
    return {case for case in plan if case not in ran}


def missing_snapshots(plan: dict[str, list[str]], sentinel: BareRun) -> list[tuple[str, str]]:
    """(case, buffer) pairs the findings need and the sentinel run did not snapshot."""
    return [
        (case, name) for case, names in plan.items() for name in names if name not in sentinel.snapshots.get(case, {})
    ]


def _unconfirmed(finding: Finding, reason: str) -> Finding:
    return finding.model_copy(
        update={"confirmation": Confirmation.UNCONFIRMED, "confirmation_evidence": ConfirmationEvidence(reason=reason)}
    )


def confirm_findings(
    result: RunResult,
    parsed: ParseResult | None,
    request: ProbeRequest,
    settings: Settings,
    workdir: Path,
    early: EarlyReruns | None = None,
) -> RunResult:
    """`result` with each initcheck finding confirmed and the confirmer's control checked (then set aside).
    `early`: the re-runs started beside the sanitizer run (start_early); the caller closes them."""
    control = [f for f in result.findings if is_confirm_control(f.case)]
    findings = [f for f in result.findings if not is_confirm_control(f.case)]
    cases = [c for c in result.cases if not is_confirm_control(c.id)]
    targets = [i for i, f in enumerate(findings) if f.tool is Tool.INITCHECK and f.kind != "expectation-violation"]
    for i in [i for i in targets if findings[i].kind == HOST_API_UNINITIALIZED]:
        findings[i] = _unconfirmed(findings[i], HOST_API_REASON)
    targets = [i for i in targets if findings[i].kind != HOST_API_UNINITIALIZED]
    update: dict[str, object] = {
        "findings": findings,
        "cases": cases,
        "control_records": sum(f.count for f in control),
    }
    probe = registry.get(request.probe)
    enabled = request.confirm if request.confirm is not None else settings.confirm
    if not targets or not result.outcome.ran or not enabled:
        return result.model_copy(update=update)
    if (why_not := poison_refusal(request)) is not None:
        for i in targets:
            findings[i] = _unconfirmed(
                findings[i], f"{why_not} (cuprobe does not control the memory of probe {probe.name})"
            )
        return result.model_copy(update={**update, "message": f"{result.message}; {confirmation_summary(findings)}"})
    flagged: dict[tuple[str, str | None], FlaggedMemory] = parsed.flagged if parsed else {}
    only = ""  # what the re-runs were narrowed to, for the message
    watch: dict[str, set[str]] = {}
    for finding in [findings[i] for i in targets] + control:
        memory = flagged.get((finding.signature, finding.case))
        if finding.case and memory:
            watch.setdefault(finding.case, set()).update(memory.ranges)
    plan = {case: sorted(names) for case, names in watch.items()}
    left_out: set[str] = set()  # flagged cases the early re-runs did not run, and the runs that ran them after
    later: dict[str, BareRun] = {}
    if early is not None:
        runs, spent = early.results(), early.spent_s
        left_out = not_rerun(plan, runs)
        if left_out:
            own = {case for case in left_out if not is_confirm_control(case)}
            params = narrowed_params(probe, result.params, own) or result.params
            late = Reruns(request, params, {c: plan[c] for c in left_out}, settings, workdir, folder=LATE_DIR)
            later, spent = late.results(), round(spent + late.spent_s, 3)
            only = f", and after it for the {len(left_out)} flagged case(s) they did not run"
            failed_late = [run for run in later.values() if not run.ok]
            if failed_late:
                only += f" (which could not run: {failed_late[0].message})"
        kept = {case: names for case, names in plan.items() if case not in left_out}
        if runs["sentinel"].ok and missing_snapshots(kept, runs["sentinel"]):
            # The early sentinel run left a flagged buffer out (past its byte cap): again, watching only those.
            late = Reruns(request, result.params, kept, settings, workdir, runs=(("sentinel", "sentinel"),))
            runs["sentinel"] = late.results()["sentinel"]
            spent = round(spent + late.spent_s, 3)
    else:
        late = Reruns(request, result.params, plan, settings, workdir)
        runs, spent = late.results(), late.spent_s

    def decided(finding: Finding) -> Finding:
        ran = later if finding.case in left_out else runs
        verdict, evidence = decide(finding, flagged.get((finding.signature, finding.case)), ran)
        evidence.bare_runs_s = spent
        return finding.model_copy(update={"confirmation": verdict, "confirmation_evidence": evidence})

    for i in targets:
        findings[i] = decided(findings[i])
    failed = [run for run in runs.values() if not run.ok]
    if failed:  # nothing was confirmed (every finding says why), so there is no verdict for a control to check
        note = f"{confirmation_summary(findings)}: the bare re-runs could not run ({failed[0].message})"
        return result.model_copy(update={**update, "confirmation_s": spent, "message": f"{result.message}; {note}"})
    planted = blind_spot_planted(result.sanitizer_version, user_filters(request))
    if not planted:
        for i in targets:
            if findings[i].confirmation is Confirmation.BLIND_SPOT:
                findings[i] = _unconfirmed(
                    findings[i], f"decided blind-spot, but no control proves it here: {NOT_PLANTED}"
                )
    checks: list[dict[str, Any]] = []
    for case_id, (expected, what) in CONTROL_CASES.items():
        mine = [decided(f) for f in control if f.case == case_id and f.tool is Tool.INITCHECK]
        got = sorted({f.confirmation.value for f in mine if f.confirmation})
        reason = "; ".join(f.confirmation_evidence.reason for f in mine if f.confirmation_evidence)
        ok = got == [expected]
        if expected == Confirmation.BLIND_SPOT.value and not planted:
            expected, what, ok = "no finding", f"{what} (seen: {NOT_PLANTED})", not mine
        checks.append({"case": case_id, "what": what, "expected": expected, "got": got, "ok": ok, "reason": reason})
    update.update(confirmation_s=spent, confirmation_control=checks)
    wrong = [c for c in checks if not c["ok"]]
    if wrong:
        update.update(
            outcome=Outcome.SANITIZER_ERROR,
            message="the confirmer's control came out wrong, so no confirmation of this run can be trusted: "
            + "; ".join(
                f"{c['case']} expected {c['expected']}, got {', '.join(c['got']) or 'no finding'} ({c['reason']})"
                for c in wrong
            ),
        )
    else:
        when = ", started beside the sanitizer run" if early is not None else ""
        if early is not None and early.shared_by > 1:
            when += f", one set for the sweep's {early.shared_by} processes of this grid{early.where}"
        if warm := sum(1 for run in runs.values() if run.warm):
            when += f", {warm} of them in processes ready before it"
        update["message"] = (
            f"{result.message}; {confirmation_summary(findings)} ({spent:g} s of bare re-runs{when}{only})"
        )
    return result.model_copy(update=update)
