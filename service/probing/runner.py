"""Run one probe (under compute-sanitizer or bare) and return its classified RunResult."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pydantic import ValidationError

from probes.allocator import needs_nvtx
from probes.contract import Allocation, ProbeResult, Tool
from service.config import Settings, get_settings
from service.models import Evidence, Finding, Outcome, ProbeRequest, RunResult
from service.models.reasons import ALSO
from service.probing.admission import Admission, admit, suppressions_file
from service.probing.environment import PROJECT_ROOT, fingerprint, gpu_facts
from service.sanitizer.classify import RunEvidence, classify
from service.sanitizer.command import probe_command, sanitizer_command
from service.sanitizer.findings import bounded
from service.sanitizer.locate import SanitizerMissing, find_sanitizer, sanitizer_version
from service.sanitizer.options import OptionRefused, check_options, installed_options
from service.sanitizer.parse import ParseResult, parse_xml
from service.sanitizer.summary import read_summary
from service.sanitizer.supervise import supervise

XML_NAME, RESULT_NAME, STDOUT_NAME, STDERR_NAME = "run.xml", "result.json", "stdout.txt", "stderr.txt"
EXIT_CODE_NAME = "exit_code"
# What the command probe reads to run as the local user, unrestricted (cuprobe exec, gate --local).
COMMAND_TRUSTED_ENV = "CUPROBE_COMMAND_TRUSTED"
EXTENSION_DIR_ENV = "CUPROBE_EXTENSION_DIR"  # where probes cache built extensions (kernels/extension.py)


def _probe_env(tool: Tool, settings: Settings | None = None, trusted: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != COMMAND_TRUSTED_ENV}
    settings = settings or get_settings()
    env.setdefault(EXTENSION_DIR_ENV, str((settings.data_dir / "extensions").resolve()))
    if trusted:
        env.update({COMMAND_TRUSTED_ENV: "1", "CUPROBE_COMMAND_ENABLED": "1"})
    elif settings.command_enabled:  # the probe reads the switch itself; the setting may have come by its old name
        env["CUPROBE_COMMAND_ENABLED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["CUPROBE_TOOL"] = tool.value
    env["CUPROBE_CALLER_CWD"] = os.getcwd()  # probes run from the project root; replay runs the caller's program
    if tool in (Tool.INITCHECK, Tool.MEMCHECK):
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # a cached block looks written and in bounds
    return env


def _read_probe_result(path: Path) -> tuple[ProbeResult | None, str | None]:
    try:
        return ProbeResult.model_validate_json(path.read_bytes()), None
    except FileNotFoundError:
        return None, "the probe wrote no result.json"
    except (OSError, ValidationError, ValueError) as exc:
        return None, f"result.json unreadable: {str(exc)[:300]}"


def _unavailable(request: ProbeRequest, tool: Tool, params: dict[str, object], message: str) -> RunResult:
    return RunResult(
        probe=request.probe,
        tool=tool,
        params=params,
        outcome=Outcome.UNAVAILABLE,
        message=message,
        environment=fingerprint(),
    )


def _preflight(
    request: ProbeRequest, admitted: Admission, settings: Settings
) -> tuple[Path | None, RunResult | None]:
    """The sanitizer binary, or an `unavailable` result saying plainly everything that is missing."""
    tool, params = admitted.tool, admitted.params
    sanitizer, missing = None, []
    if admitted.needs_gpu and gpu_facts()[0] is None:
        missing.append(
            # The same words for every probe, so a list of runs can say it once with a count.
            "no CUDA device on this machine (NVML and nvidia-smi found no GPU), and this run needs one: submit it to a "
            "GPU worker's queue (gpu.smXX) or run it on a GPU machine"
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
) -> RunResult:
    """Run `request` once; artifacts (run.xml, stdout.txt, stderr.txt, result.json) land in `workdir`.

    `trusted`: a local run as the user (cuprobe run/exec, gate --local): commands run unrestricted and
    suppressions are paths; a worker's job is not: the operator's allowlist applies and suppressions are names.
    BadRequest (service.probing.admission) when the request does not pass admission."""
    settings = settings or get_settings()
    workdir = workdir.resolve()  # the probe runs in the project root: a relative path would point there
    admitted = admit(request.probe, request.tool, request.params, request.options)
    tool, params = admitted.tool, admitted.params
    suppressions = (
        suppressions_file(request.options.suppressions, trusted=trusted, settings=settings)
        if request.options.suppressions and tool is not Tool.NONE
        else None
    )
    sanitizer, refusal = _preflight(request, admitted, settings)
    if refusal is not None:
        return refusal
    workdir.mkdir(parents=True, exist_ok=True)
    xml, result_path = workdir / XML_NAME, workdir / RESULT_NAME
    for stale in (xml, result_path):
        stale.unlink(missing_ok=True)
    target = probe_command(request.probe, params, result_path, tool, settings.python)
    version = sanitizer_version(sanitizer) if sanitizer else None
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
            suppressions=suppressions or (Path(request.suppressions) if request.suppressions else None),
            extra=["--show-backtrace", backtrace]
            if (backtrace := request.show_backtrace or settings.show_backtrace)
            else (),
            nvtx=needs_nvtx(params),
        )
    )
    done = supervise(
        cmd,
        timeout_s=request.timeout_s or settings.timeout_s,
        max_output_bytes=settings.max_output_bytes,
        env=_probe_env(tool, settings, trusted),
        cwd=PROJECT_ROOT,
        xml_path=xml if sanitizer else None,
        max_xml_bytes=settings.max_xml_bytes,
        cancel=cancel_event,
    )
    (workdir / STDOUT_NAME).write_text(done.stdout.text())
    (workdir / STDERR_NAME).write_text(done.stderr.text())
    (workdir / EXIT_CODE_NAME).write_text(f"{done.returncode}\n")
    probe, unreadable = _read_probe_result(result_path)
    summary = read_summary(done.stdout.tail_text()) if sanitizer else None
    parsed = None
    if sanitizer is not None:
        allocations = allocations_of(probe) if probe else []
        single = probe.cases[0].id if probe and len(probe.cases) == 1 else None
        parsed = (
            parse_xml(
                xml,
                tool=tool,
                roots=[str(PROJECT_ROOT), os.getcwd(), *settings.source_roots],
                allocations=allocations,
                single_case=single,
                sanitizer_version=version,
                filtered=bool(request.kernel_filter or request.options.kernel_name),
                max_records=settings.max_records,
                max_bytes=settings.max_xml_bytes,
            )
            if xml.exists()
            else ParseResult(tool=tool)
        )
        if summary and summary.not_printed:
            parsed.truncated = True
    verdict = classify(
        RunEvidence(
            tool=tool,
            returncode=done.returncode,
            timed_out=done.timed_out,
            timeout_s=request.timeout_s or settings.timeout_s,
            xml_capped=done.xml_capped,
            summary=summary,
            parsed=parsed,
            probe=probe,
            probe_unreadable=unreadable,
            error_exitcode=settings.error_exitcode,
            stderr_tail=done.stderr.tail_text() + "\n" + done.stdout.tail_text(),
        )
    )
    outcome, message = verdict.outcome, verdict.message
    if done.cancelled:
        outcome, message = Outcome.PROBE_ERROR, "stopped on request (cancel): cuprobe killed the process group"
    findings = keyed_by_options(
        (parsed.findings if parsed else []) + violation_findings(request.probe, tool, probe), request
    )
    return RunResult(
        probe=request.probe,
        tool=tool,
        params=params,
        outcome=outcome,
        message=message,
        records=parsed.records if parsed else 0,
        summary_count=summary.errors if summary else None,
        truncated=bool(parsed and parsed.truncated) or done.xml_capped,
        truncated_at_case=parsed.truncated_at_case if parsed else None,
        filtered=bool(request.kernel_filter or request.options.kernel_name) and tool is Tool.INITCHECK,
        options=request.options,
        sanitizer_version=version,
        environment=fingerprint(version, str(sanitizer) if sanitizer else None),
        findings=findings,
        cases=verdict.cases,
        command=list(cmd),
        exit_code=done.returncode,
        signal=verdict.signal,
        duration_s=round(done.duration_s, 3),
        probe_context=probe.context if probe else {},
    )


def keyed_by_options(findings: list[Finding], request: ProbeRequest) -> list[Finding]:
    """Findings whose signatures carry the options they ran under (not the suppressions file): a baseline
    entry recorded under other options does not match them."""
    key = request.options.model_copy(update={"suppressions": None}).key()
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

