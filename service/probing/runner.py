"""Run one probe (under compute-sanitizer or bare) and return its classified RunResult."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from cuprobe.contract import (
    HEARTBEAT_ENV,
    PREFETCH_TORCH_FLAG,
    QUICK_EXIT_FLAG,
    Allocation,
    ProbeResult,
    Tool,
    is_confirm_control,
)
from cuprobe.probes.allocator import needs_nvtx
from cuprobe.service.config import Settings, get_settings
from cuprobe.service.db.artifacts import read_regular, write_artifact
from cuprobe.service.models import Backtrace, Evidence, Finding, Outcome, ProbeRequest, RunResult
from cuprobe.service.models.reasons import ALSO
from cuprobe.service.models.timing import Stages
from cuprobe.service.probing.admission import Admission, admit, sanitizer_fields, suppressions_file
from cuprobe.service.probing.confirm import (
    EarlyReruns,
    confirm_findings,
    confirming,
    control_options,
    refuse_unconfirmable,
    start_early,
    user_filters,
)
from cuprobe.service.probing.demangle import NO_DEMANGLING, holds_mangled_names, skips_demangling
from cuprobe.service.probing.environment import PROJECT_ROOT, fingerprint, gpu_facts
from cuprobe.service.probing.handover import FIFO_NAME, hand_over, move_artifacts
from cuprobe.service.probing.launch import read_probe_result
from cuprobe.service.probing.planned import PlannedRun
from cuprobe.service.probing.sandbox import (
    NO_SANDBOX,
    job_environment,
    job_paths,
    prepare_workdir,
    runs_jobs_code,
    sandbox_command,
    sandbox_refusal,
)
from cuprobe.service.probing.secrets import probe_environment, scrub, scrub_result, secret_values
from cuprobe.service.probing.spares import Spare, Spares, params_json, spare_command, warm_key
from cuprobe.service.sanitizer.chunks import Context
from cuprobe.service.sanitizer.classify import Classification, RunEvidence, classify, control_verdict
from cuprobe.service.sanitizer.command import passed_anyway, probe_command, sanitizer_command
from cuprobe.service.sanitizer.findings import bounded
from cuprobe.service.sanitizer.launches import DUMP_FLAG, Launches, checked_note, discount, nothing_checked
from cuprobe.service.sanitizer.locate import SanitizerMissing, find_sanitizer, sanitizer_version
from cuprobe.service.sanitizer.options import OptionRefused, check_options, installed_options
from cuprobe.service.sanitizer.parse import ParseResult, parse_xml
from cuprobe.service.sanitizer.pool import ChildParser
from cuprobe.service.sanitizer.ports import lease as lease_ports
from cuprobe.service.sanitizer.summary import SanitizerSummary, read_summary
from cuprobe.service.sanitizer.supervise import Supervised, start, watch

XML_NAME, RESULT_NAME, STDOUT_NAME, STDERR_NAME = "run.xml", "result.json", "stdout.txt", "stderr.txt"
EXIT_CODE_NAME, HEARTBEAT_NAME = "exit_code", "heartbeat"


@dataclass(frozen=True)
class ChildParsing:
    """Parse a run's XML in child processes (service/sanitizer/pool.py) instead of the process that ran it: a local
    sweep's K slots are threads of one process, whose K parses would otherwise take turns on its interpreter lock.
    `slots`: how many runs of this process parse at once (the more, the fewer records make a child pay); `start`:
    what starts a child (a sweep's fork server, service/sanitizer/forked.py; None: pool.ChunkWorker)."""

    slots: int
    start: Callable[[Context], ChildParser] | None = None


def _unavailable(request: ProbeRequest, tool: Tool, params: dict[str, object], message: str) -> RunResult:
    return RunResult(
        probe=request.probe,
        tool=tool,
        params=params,
        outcome=Outcome.UNAVAILABLE,
        message=message,
        environment=fingerprint(),
        options=request.options,  # what was asked, though nothing ran: a re-run elsewhere needs it
    )


def _preflight(request: ProbeRequest, admitted: Admission, settings: Settings) -> tuple[Path | None, RunResult | None]:
    """The sanitizer binary, or an `unavailable` result saying plainly everything that is missing."""
    tool, params = admitted.tool, admitted.params
    sanitizer, missing = None, []
    bare_users_program = tool is Tool.NONE and admitted.probe.runs_users_program
    if admitted.needs_gpu and not bare_users_program and gpu_facts()[0] is None:
        missing.append(
            # The same words for every probe, so a list of runs can say it once with a count.
            "no CUDA device on this machine (NVML and nvidia-smi found no GPU), and this run needs one: submit it "
            "to a GPU worker's queue (gpu.smXX) or run it on a GPU machine"
        )
    if tool is not Tool.NONE:
        try:
            sanitizer = find_sanitizer(settings.sanitizer_path)
        except SanitizerMissing as exc:
            missing.append(str(exc))
    if sanitizer is not None and request.options.flags():
        try:
            check_options(request.options, tool, installed_options(sanitizer))
        except OptionRefused as exc:
            missing.append(f"refused before the run: {exc}")
    if missing:
        return None, _unavailable(request, tool, params, ALSO.join(missing))
    return sanitizer, None


def run_probe(
    request: ProbeRequest,
    *,
    workdir: Path,
    settings: Settings | None = None,
    cancel_event: threading.Event | None = None,
    trusted: bool = False,
    stages: Stages | None = None,
    spares: Spares | None = None,
    shared: EarlyReruns | None = None,
    child_parsing: ChildParsing | None = None,
) -> RunResult:
    """Run `request` once; artifacts (run.xml, stdout.txt, stderr.txt, result.json) land in `workdir`.

    `trusted`: a local run as the user (cuprobe run/exec, gate --local): commands run unrestricted, the probe gets
    the user's environment and suppressions are paths; a worker's job is not: the operator's allowlist applies,
    the probe gets the allowlisted environment and suppressions are names.
    `stages`: where the wall time of each stage goes (a worker passes its own, holding its claim); the result
    carries them as `timing`.
    `shared`: the confirmation's re-runs this run shares with others (a sweep's batches, shared.py), used
    instead of its own and left running for their owner to close.
    `spares`: warm starts (service/probing/spares.py): the run goes to a matching spare process if one is ready,
    and asks for one for the next run like it.
    `child_parsing`: parse the XML in child processes (a local sweep's, past one slot); None: here.
    BadRequest (service.probing.admission) when the request does not pass admission."""
    settings = settings or get_settings()
    stages = stages if stages is not None else Stages()
    plan = partial(plan_run, request, workdir=workdir, settings=settings, trusted=trusted)
    with stages.stage("prepare"):
        planned = plan()
    if isinstance(planned, RunResult):
        return planned.model_copy(update={"timing": stages.rounded()})
    ended = threading.Event()
    spare = _spare_for(request, planned, settings, trusted, spares, ended)
    # The confirmation's bare re-runs do not depend on the run's findings: they start now, beside it.
    own = (
        None
        if shared
        else start_early(request, planned.admitted.tool, planned.admitted.params, settings, planned.workdir)
    )
    try:
        return _run_planned(
            request,
            planned,
            settings,
            cancel_event,
            stages,
            replan=plan,
            spare=spare,
            early=shared or own,
            child_parsing=child_parsing,
        )
    finally:
        ended.set()
        if own is not None:
            own.close()


def plan_run(
    request: ProbeRequest, *, workdir: Path, settings: Settings, trusted: bool = False, demangle: bool = False
) -> PlannedRun | RunResult:
    """Admission, the sanitizer preflight, then the exact command and environment a run of `request` uses (with
    its files in `workdir`); an `unavailable` result when it cannot run here. `demangle`: keep the sanitizer's
    demangler on even where the run would not need it (service/probing/demangle.py)."""
    workdir = workdir.resolve()  # the probe runs in the project root: a relative path would point there
    admitted = admit(request.probe, request.tool, request.params, request.options)
    sanitizer_fields(request, admitted.tool)
    refuse_unconfirmable(request, admitted.tool, settings)
    tool, params = admitted.tool, admitted.params
    chosen = request.options.suppressions or request.suppressions
    suppressions = (
        suppressions_file(chosen, trusted=trusted, settings=settings) if chosen and tool is not Tool.NONE else None
    )
    sanitizer, refusal = _preflight(request, admitted, settings)
    if refusal is not None:
        return refusal
    xml, result_path = workdir / XML_NAME, workdir / RESULT_NAME
    target = probe_command(request.probe, params, result_path, tool, settings.python)
    version = sanitizer_version(sanitizer) if sanitizer else None
    extra: list[str] = []
    if backtrace := request.show_backtrace or settings.show_backtrace or default_backtrace(admitted):
        extra += ["--show-backtrace", backtrace]
    raw_names = sanitizer is not None and not demangle and skips_demangling(tool, backtrace, sanitizer)
    if raw_names:
        extra += NO_DEMANGLING
    dump = sanitizer is not None and dumps_launches(request, sanitizer)
    if dump:
        extra.append(DUMP_FLAG)
    if quick_exits(request, admitted, sanitizer):
        target.append(QUICK_EXIT_FLAG)
    if prefetches_torch(admitted, sanitizer):
        target.append(PREFETCH_TORCH_FLAG)
    if confirming(request, tool, settings):
        target.append("--confirm-control")  # the confirmer's planted cases run in the same process
        extra += control_options(version, [*request.kernel_filter, *request.options.kernel_name], user_filters(request))
    ports = lease_ports() if sanitizer is not None else None  # held until the sanitizer has exited
    if ports is not None:
        extra += ports.options()
    cmd = (
        target
        if sanitizer is None
        else sanitizer_command(
            sanitizer,
            tool,
            target,
            xml=xml,
            error_exitcode=settings.error_exitcode,
            options=request.options,
            kernel_filter=request.kernel_filter,
            suppressions=suppressions,
            extra=extra,
            nvtx=needs_nvtx(params),
        )
    )
    env = probe_environment(tool, settings, trusted=trusted)
    env[HEARTBEAT_ENV] = str(workdir / HEARTBEAT_NAME)  # read only by probes that beat (Probe.beats)
    sandboxed = False
    if not trusted and runs_jobs_code(admitted.probe, params):
        if (why := sandbox_refusal()) is None:
            prepare_workdir(workdir)
            cmd = sandbox_command(list(cmd), workdir, settings, os.environ.get("HOME"), job_paths(params))
            env, sandboxed = job_environment(env, workdir), True
        elif not settings.unsafe_no_sandbox:
            if ports is not None:
                ports.release()
            return _unavailable(request, tool, params, f"{NO_SANDBOX}: {why}")
    return PlannedRun(
        admitted, list(cmd), env, workdir, xml, result_path, sanitizer, version, ports, raw_names, dump, sandboxed
    )


def _own_cases_sanitized(admitted: Admission, sanitizer: Path | None) -> bool:
    """A sanitizer run of a probe that runs its cases in its own process, not the user's program (Probe.warms)."""
    return sanitizer is not None and admitted.probe.warms


def quick_exits(request: ProbeRequest, admitted: Admission, sanitizer: Path | None) -> bool:
    """Whether the probe's process ends with os._exit once its result is written, skipping Python's finalizers and
    the CUDA contexts' teardown under the sanitizer: such a run (_own_cases_sanitized) whose options ask for nothing
    the sanitizer reports at teardown. At K = 8 on H100s a sanitizer process's exit took 0.49-0.67 s (a sweep's
    median) instead of 0.84-1.21 s, with the same records and findings."""
    return _own_cases_sanitized(admitted, sanitizer) and not request.options.reports_at_teardown


def prefetches_torch(admitted: Admission, sanitizer: Path | None) -> bool:
    """Whether the probe's process imports torch on a second thread from its start (probes/prefetch.py; the harness
    does only where the parameters use torch): such a run (_own_cases_sanitized). It took torch's import off the
    critical path of the 384-case grid's cold sweep (about 6 % more cases per GPU-hour on H100s and the H200). Never
    a bare run: a bare bf16-matmul times its kernels, and nothing may run beside them."""
    return _own_cases_sanitized(admitted, sanitizer)


def dumps_launches(request: ProbeRequest, sanitizer: Path) -> bool:
    """Whether a run asks the sanitizer for its launch dump: its kernel or NVTX filters choose what is checked, and
    the installed sanitizer has --dump-kernel-launches (2026.4 and later; read from its --help)."""
    return user_filters(request) and DUMP_FLAG in installed_options(sanitizer).options


def _selecting(request: ProbeRequest) -> tuple[list[str], list[str]]:
    """The run's options that choose the launches checked, as `--flag value`: all of them, and those the launch dump
    reports on (kernel and NVTX filters; not --launch-skip and --launch-count)."""
    filters = [f"--kernel-name kns={name}" for name in request.kernel_filter] + request.options.selecting()
    return filters, [f for f in filters if not f.startswith(("--launch-skip", "--launch-count"))]


def _filtered_verdict(
    verdict: Classification, filters: list[str], chosen: list[str], launches: Launches | None, truncated: bool
) -> tuple[Classification, list[str]]:
    """A clean run whose options choose the launches checked (`filters`, `chosen`: _selecting's): `sanitizer_error`
    where the launch dump shows the filters selected none of the program's launches, else clean with a note saying
    what was checked (or that the sanitizer could not say)."""
    counts = [f for f in filters if f not in chosen]
    notes: list[str] = []
    unsaid = filters
    if chosen and launches is not None:
        if (why := nothing_checked(launches, chosen)) is not None and not truncated:
            return Classification(Outcome.SANITIZER_ERROR, why), []
        notes.append(checked_note(launches, chosen))
        unsaid = counts  # the dump does not say which launches --launch-skip and --launch-count left out
    if unsaid:
        notes.append(
            f"only the launches that {', '.join(unsaid)} select{'s' if len(unsaid) == 1 else ''} were checked: "
            "compute-sanitizer does not say whether any launch was, so a filter that selects none reads clean too"
            + (
                " (compute-sanitizer 2026.4 and later says so for kernel and NVTX filters, in the launch dump cuprobe "
                "asks for there)"
                if chosen and launches is None
                else ""
            )
        )
    return verdict, notes


@dataclass
class Made:
    """The run as it was finally made: its plan, how its process ended, the stalls it had on the way and what else
    the message should say about how it was made."""

    planned: PlannedRun
    done: Supervised
    stalls: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Read:
    """What the run left, read back: the probe's result (or why it could not be read), the sanitizer's summary and
    parsed XML, its launch dump, and the secrets scrubbed from all of it."""

    probe: ProbeResult | None
    unreadable: str | None
    secrets: list[str]
    summary: SanitizerSummary | None = None
    parsed: ParseResult | None = None
    launches: Launches | None = None


def _make(
    request: ProbeRequest,
    planned: PlannedRun,
    settings: Settings,
    cancel_event: threading.Event | None,
    stages: Stages,
    replan: Callable[..., PlannedRun | RunResult],
    spare: Spare | None,
) -> Made | RunResult:
    """Run the planned command (in `spare`, when given); a run the watchdog stopped, or one without the demangler
    whose XML still names a mangled function, is planned again by `replan` and made once more, in a fresh process.
    A RunResult where it can no longer run."""
    made = Made(planned, _supervised(request, planned, settings, cancel_event, stages, spare))

    def once_more(stage: str, **how: bool) -> RunResult | None:
        """The attempt's time kept as `stage`, the run planned again (`how`: plan_run's options) and made in a fresh
        process; the result where it can no longer run."""
        stages.add(stage, made.done.duration_s)
        again = replan(**how)
        if isinstance(again, RunResult):
            return again.model_copy(update={"timing": stages.rounded(), "stalls": made.stalls})
        made.planned, made.done = again, _supervised(request, again, settings, cancel_event, stages)
        return None

    if made.done.stalled_s is not None and not (cancel_event and cancel_event.is_set()):
        # A stalled process (docs/outcomes.md): stop it and run the same request once more, in a fresh process.
        made.stalls.append(_stall_note(made.done))
        if (unavailable := once_more("stalled")) is not None:
            return unavailable
    cancelled = bool(cancel_event and cancel_event.is_set())
    if made.planned.raw_names and not cancelled and holds_mangled_names(made.planned.xml):
        # A record names a C++ function, which the run left mangled: run it again with the demangler, so that its
        # findings are those of any other run (service/probing/demangle.py).
        if (unavailable := once_more("undemangled", demangle=True)) is not None:
            return unavailable
        made.notes.append("run again with the sanitizer's demangler: a record named a mangled (C++) function")
    done = made.done
    stages.add("spawn", done.spawned_s)
    stages.add("run", done.exited_s - done.spawned_s)
    stages.add("reap", done.duration_s - done.exited_s)
    return made


def _keep_artifacts(made: Made, settings: Settings) -> Read:
    """The process's output written beside its result, secrets scrubbed from both, and the probe's result read."""
    planned, done = made.planned, made.done
    secrets = secret_values(settings)
    # The probe could have planted symlinks under these names: replace them, never write through them.
    write_artifact(planned.workdir / STDOUT_NAME, scrub(done.stdout.text(), secrets))
    write_artifact(planned.workdir / STDERR_NAME, scrub(done.stderr.text(), secrets))
    write_artifact(planned.workdir / EXIT_CODE_NAME, f"{done.returncode}\n")
    _scrub_file(planned.result_path, secrets)
    probe, unreadable = read_probe_result(planned.result_path)
    return Read(probe, unreadable, secrets)


def _parse(
    read: Read, made: Made, request: ProbeRequest, settings: Settings, child_parsing: ChildParsing | None
) -> None:
    """The sanitizer's summary and XML parsed into `read` (a bare run has neither), findings mapped to the probe's
    cases by their buffers' addresses, and the launch dump taken out where the run asked for one."""
    planned, probe = made.planned, read.probe
    if planned.sanitizer is None:
        return
    read.summary = read_summary(made.done.stdout.tail_text())
    xml = planned.xml
    own = [c for c in probe.cases if not is_confirm_control(c.id)] if probe else []
    read.parsed = (
        parse_xml(
            xml,
            tool=planned.admitted.tool,
            roots=[str(PROJECT_ROOT), os.getcwd(), *settings.source_roots],
            allocations=allocations_of(probe) if probe else [],
            single_case=own[0].id if len(own) == 1 else None,  # the confirmer's planted cases map by address
            sanitizer_version=planned.version,
            filtered=user_filters(request),
            max_records=settings.max_records,
            max_bytes=settings.max_xml_bytes,
            in_children=child_parsing.slots if child_parsing else 0,
            child=child_parsing.start if child_parsing else None,
        )
        if xml.exists() and not xml.is_symlink()
        else ParseResult(tool=planned.admitted.tool, error=_not_regular(xml))
    )
    if read.summary and read.summary.not_printed:
        read.parsed.truncated = True
    if planned.launch_dump and not read.parsed.error:
        read.launches = read.parsed.launches


def _classified(read: Read, made: Made, request: ProbeRequest, settings: Settings) -> RunResult:
    """The run's RunResult: its outcome from the classifier, with its findings, cases and how it was made."""
    planned, done, parsed, probe = made.planned, made.done, read.parsed, read.probe
    tool, version, sanitizer = planned.admitted.tool, planned.version, planned.sanitizer
    # The launch records are counted in the summary and turn the exit status into the error exit code: taken out.
    filters, chosen = _selecting(request)
    returncode = done.returncode
    if read.launches is not None:
        returncode = discount(read.summary, read.launches, returncode, settings.error_exitcode)
    verdict = classify(
        RunEvidence(
            tool=tool,
            returncode=returncode,
            timed_out=done.timed_out,
            timeout_s=request.timeout_s or settings.timeout_s,
            stalled_s=done.stalled_s,
            last_beat=done.last_beat,
            xml_capped=done.xml_capped,
            cancelled=done.cancelled,
            summary=read.summary,
            parsed=parsed,
            probe=probe,
            probe_unreadable=read.unreadable,
            error_exitcode=settings.error_exitcode,
            stderr_tail=done.stderr.tail_text() + "\n" + done.stdout.tail_text(),
            launches=read.launches,
            filters=chosen,
        )
    )
    notes = list(made.notes)
    if verdict.outcome is Outcome.CLEAN:
        verdict, said = _filtered_verdict(verdict, filters, chosen, read.launches, bool(parsed and parsed.truncated))
        notes += said
    findings = keyed_by_options(
        (parsed.findings if parsed else []) + violation_findings(request.probe, tool, probe), request, tool
    )
    return RunResult(
        probe=request.probe,
        tool=tool,
        params=planned.admitted.params,
        outcome=verdict.outcome,
        message="; ".join([m for m in (verdict.message, *made.stalls, *notes) if m]),
        stalls=made.stalls,
        warm_start=done.warm,
        records=parsed.records if parsed else 0,
        summary_count=read.summary.errors if read.summary else None,
        truncated=bool(parsed and parsed.truncated) or done.xml_capped or done.cancelled,
        truncated_at_case=parsed.truncated_at_case if parsed else None,
        filtered=user_filters(request) and tool is Tool.INITCHECK,
        options=request.options,
        sanitizer_version=version,
        environment=fingerprint(version, str(sanitizer) if sanitizer else None),
        findings=findings,
        cases=verdict.cases,
        command=planned.cmd,
        exit_code=done.returncode,
        signal=verdict.signal,
        duration_s=round(done.duration_s, 3),
        probe_context=probe.context if probe else {},
    )


def _confirmed(
    result: RunResult, read: Read, request: ProbeRequest, settings: Settings, planned: PlannedRun,
    early: EarlyReruns | None,
) -> RunResult:  # fmt: skip
    """An initcheck run's findings confirmed (service/probing/confirm/), and the classifier's word on its control."""
    result = confirm_findings(result, read.parsed, request, settings, planned.workdir, early, planned.sandboxed)
    if (control := control_verdict(result.confirmation_control)) is not None:
        result = result.model_copy(update={"outcome": control.outcome, "message": control.message})
    return result


def _run_planned(
    request: ProbeRequest,
    planned: PlannedRun,
    settings: Settings,
    cancel_event: threading.Event | None,
    stages: Stages,
    replan: Callable[..., PlannedRun | RunResult],
    spare: Spare | None = None,
    early: EarlyReruns | None = None,
    child_parsing: ChildParsing | None = None,
) -> RunResult:
    """Make the planned run (_make), then keep, parse, classify and confirm what it left, each a stage of its
    timing. `early`: the confirmation's bare re-runs, started beside the sanitizer run (the caller closes them)."""
    made = _make(request, planned, settings, cancel_event, stages, replan, spare)
    if isinstance(made, RunResult):
        return made
    with stages.stage("artifacts"):
        read = _keep_artifacts(made, settings)
    with stages.stage("parse"):
        _parse(read, made, request, settings, child_parsing)
    with stages.stage("classify"):
        result = _classified(read, made, request, settings)
    if made.planned.admitted.tool is Tool.INITCHECK:
        with stages.stage("confirm"):
            result = _confirmed(result, read, request, settings, made.planned, early)
    with stages.stage("scrub"):
        result = scrub_result(result, read.secrets)
    return result.model_copy(update={"timing": stages.rounded()})


def _supervised(
    request: ProbeRequest,
    planned: PlannedRun,
    settings: Settings,
    cancel_event: threading.Event | None,
    stages: Stages,
    spare: Spare | None = None,
) -> Supervised:
    """One run of the planned command from clean files, under the time limit, the caps and the watchdog; in
    `spare` (which then holds the command's files until it ends) when one was taken and is still alive."""
    since = time.monotonic()
    with stages.stage("prepare"):
        planned.workdir.mkdir(parents=True, exist_ok=True)
        for stale in (planned.xml, planned.result_path, planned.workdir / HEARTBEAT_NAME):
            stale.unlink(missing_ok=True)
    if spare is not None:
        limit = since + (request.timeout_s or settings.timeout_s)

        def give_up() -> bool:
            return time.monotonic() > limit or bool(cancel_event and cancel_event.is_set())

        with stages.stage("hand_over"):
            handed = hand_over(spare.fifo, spare.alive, params_json(planned), give_up)
        if not handed:  # it died (or hung) warming up: this run starts cold instead
            spare.discard()
            spare = None
    running = spare.planned if spare is not None else planned
    if spare is None:
        started = start(planned.cmd, max_output_bytes=settings.max_output_bytes, env=planned.env, cwd=PROJECT_ROOT)
        since = started.start
    else:
        started = spare.started
        if planned.ports is not None:
            planned.ports.release()  # the spare brought its own block
    heartbeat = running.workdir / HEARTBEAT_NAME
    done = watch(
        started,
        since=since,
        timeout_s=request.timeout_s or settings.timeout_s,
        xml_path=running.xml if running.sanitizer else None,
        max_xml_bytes=settings.max_xml_bytes,
        cancel=cancel_event,
        heartbeat=heartbeat if running.admitted.probe.beats else None,
        stall_s=settings.stall_s,
    )
    if running.ports is not None:
        running.ports.release()
    if spare is not None:
        move_artifacts(spare.planned.workdir, planned.workdir)
        done.warm = True
    return done


def _spare_for(
    request: ProbeRequest,
    planned: PlannedRun,
    settings: Settings,
    trusted: bool,
    spares: Spares | None,
    ended: threading.Event,
) -> Spare | None:
    """A ready spare for this run, if any; and a spare asked for the next run like it, started once this run has
    begun its cases (its first heartbeat) or `ended`."""
    key = warm_key(planned) if spares is not None else None
    if spares is None or key is None:
        return None
    spare = spares.take(key)
    running = spare.planned if spare is not None else planned
    heartbeat = running.workdir / HEARTBEAT_NAME
    make = partial(start_spare, request, settings, trusted, spares.root)
    spares.ask(make, lambda: ended.is_set() or heartbeat.exists(), key)
    return spare


def start_spare(request: ProbeRequest, settings: Settings, trusted: bool, root: Path) -> Spare | None:
    """A spare for runs like `request`, in a fresh folder under `root`; None when such a run cannot warm-start."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="spare-", dir=root))
    planned = plan_run(request, workdir=folder, settings=settings, trusted=trusted)
    key = None if isinstance(planned, RunResult) else warm_key(planned)
    if key is None or isinstance(planned, RunResult):
        if isinstance(planned, PlannedRun) and planned.ports is not None:
            planned.ports.release()
        shutil.rmtree(folder, ignore_errors=True)
        return None
    fifo = folder / FIFO_NAME
    os.mkfifo(fifo, 0o600)
    cmd = spare_command(planned)
    started = start(cmd, max_output_bytes=settings.max_output_bytes, env=planned.env, cwd=PROJECT_ROOT)
    return Spare(key, planned, fifo, started)


def _stall_note(done: Supervised) -> str:
    started = f"; the last thing started: {done.last_beat}" if done.last_beat else ""
    return (
        f"an attempt stalled after {done.duration_s:.0f} s: no progress for {done.stalled_s or 0:.0f} s{started}; "
        "it was stopped and the run started again in a fresh process"
    )


def default_backtrace(admitted: Admission) -> Backtrace | None:
    """Probes that import torch run initcheck with device-only backtraces: host backtraces through libtorch are
    most of the per-record cost, and initcheck's signatures and library flag need only the device side."""
    if admitted.tool is not Tool.INITCHECK:
        return None
    return "device" if admitted.probe.uses_torch(admitted.model) else None


def _scrub_file(path: Path, secrets: list[str]) -> None:
    """Rewrite a probe-written artifact without the secrets it holds (it is served over HTTP)."""
    try:
        text = read_regular(path).decode("utf-8", errors="replace")
    except OSError:
        return
    if any(secret in text for secret in secrets):
        write_artifact(path, scrub(text, secrets))


def _not_regular(xml: Path) -> str | None:
    """Why `xml` is not read: a symlink in its place (something in the run planted it), or nothing."""
    if xml.is_symlink():
        return f"{xml.name} is a symlink, not the file the sanitizer wrote: not followed"
    return None


def keyed_by_options(findings: list[Finding], request: ProbeRequest, tool: Tool) -> list[Finding]:
    """Findings whose signatures carry the options they ran under (not the suppressions file, nor an option set
    to what cuprobe passes for the tool anyway): a baseline entry recorded under other options does not match."""
    key = request.options.signature_key(passed_anyway(tool))
    if not key:
        return findings
    return [f.model_copy(update={"signature": bounded(f"{f.signature}|opts:{key}")}) for f in findings]


def violation_findings(probe_name: str, tool: Tool, probe: ProbeResult | None) -> list[Finding]:
    """A probe's violated expectations (tool|expectation-violation|probe|case) and its own observed findings."""
    out = []
    for case in probe.cases if probe else []:
        for violation in case.violations:
            out.append(
                Finding(
                    signature=bounded(f"{tool.value}|expectation-violation|{probe_name}|{case.id}"),
                    tool=tool,
                    kind="expectation-violation",
                    message=violation,
                    case=case.id,
                    count=1,
                )
            )
        for seen in case.findings:
            out.append(
                Finding(
                    signature=bounded(seen.signature),
                    tool=tool,
                    kind=seen.kind,
                    message=seen.message,
                    case=case.id,
                    count=1,
                    seen=seen.seen,
                    evidence=Evidence(seen.evidence),
                )
            )
    return out


def allocations_of(probe: ProbeResult) -> list[tuple[str, Allocation]]:
    return [(c.id, a) for c in probe.cases for a in c.allocations]
