"""Run one probe (under compute-sanitizer or bare) and return its classified RunResult."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from pydantic import ValidationError

from probes import registry
from probes.contract import Allocation, ProbeResult, Tool
from service.config import Settings
from service.db.artifacts import read_regular, write_artifact
from service.models import Finding, Outcome, ProbeRequest, RunResult
from service.probing.environment import PROJECT_ROOT, fingerprint, gpu_facts
from service.probing.secrets import probe_environment, scrub, scrub_result, secret_values
from service.sanitizer.classify import RunEvidence, classify
from service.sanitizer.command import probe_command, sanitizer_command
from service.sanitizer.findings import bounded
from service.sanitizer.locate import SanitizerMissing, find_sanitizer, sanitizer_version
from service.sanitizer.parse import ParseResult, parse_xml
from service.sanitizer.summary import read_summary
from service.sanitizer.supervise import supervise

XML_NAME, RESULT_NAME, STDOUT_NAME, STDERR_NAME = "run.xml", "result.json", "stdout.txt", "stderr.txt"
EXIT_CODE_NAME = "exit_code"
# A job names its suppressions file; the worker finds it in its suppressions directory (no path, no option).
SUPPRESSIONS_NAME = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$"


class BadRequest(ValueError):
    """The request names an unknown probe, a tool the probe does not support, or bad parameters."""


def resolve(request: ProbeRequest) -> tuple[Tool, dict[str, object]]:
    """The tool to use and the validated parameters (defaults filled in); BadRequest names what is wrong."""
    try:
        probe = registry.get(request.probe)
    except registry.UnknownProbe as exc:
        raise BadRequest(str(exc)) from exc
    tool = request.tool or probe.tools[0]
    if tool not in probe.tools:
        raise BadRequest(
            f"probe {probe.name} does not run under {tool}; allowed: {', '.join(t.value for t in probe.tools)}"
        )
    try:
        params = probe.Params.model_validate(request.params).model_dump(mode="json")
    except ValidationError as exc:
        raise BadRequest(f"bad parameters for probe {probe.name}: {exc}") from exc
    return tool, params


def named_suppressions(name: str, directory: Path | None) -> Path:
    """The file `name` names in the suppressions directory (a job's request); BadRequest saying why not."""
    if directory is None:
        raise BadRequest("this server has no suppressions directory (CUPROBE_SUPPRESSIONS_DIR)")
    if re.fullmatch(SUPPRESSIONS_NAME, name) is None:
        raise BadRequest(f"{name!r} is not a suppressions file name (letters, digits and ._- only, never a path)")
    path = directory / name
    if path.is_symlink() or not path.is_file():
        raise BadRequest(f"no suppressions file {name!r} in the server's suppressions directory")
    return path.resolve()


def _suppressions(request: ProbeRequest, named_in: Path | None, named: bool) -> Path | None:
    """The suppressions file: by name in the server's directory for a job, a path for a local run."""
    if request.suppressions is None:
        return None
    if named:
        return named_suppressions(request.suppressions, named_in)
    path = Path(request.suppressions).resolve()
    if not path.is_file():
        raise BadRequest(f"suppressions: no such file {path}")
    return path


def _read_probe_result(path: Path) -> tuple[ProbeResult | None, str | None]:
    try:
        return ProbeResult.model_validate_json(read_regular(path)), None
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
    request: ProbeRequest, tool: Tool, params: dict[str, object], settings: Settings
) -> tuple[Path | None, RunResult | None]:
    """The sanitizer binary, or an `unavailable` result saying plainly everything that is missing."""
    needs_gpu = registry.get(request.probe).needs_gpu or tool is not Tool.NONE
    sanitizer, missing = None, []
    if needs_gpu and gpu_facts()[0] is None:
        missing.append(
            f"no CUDA device on this machine (nvidia-smi found no GPU): {request.probe} under {tool} "
            "needs one; submit it to a GPU worker's queue (gpu.smXX) or run it on a GPU machine"
        )
    if tool is not Tool.NONE:
        try:
            sanitizer = find_sanitizer(settings.sanitizer_path)
        except SanitizerMissing as exc:
            missing.append(str(exc))
    if missing:
        return None, _unavailable(request, tool, params, "; ".join(missing))
    return sanitizer, None


def run_probe(
    request: ProbeRequest,
    *,
    workdir: Path,
    settings: Settings | None = None,
    cancel_event: threading.Event | None = None,
    named_suppressions: bool = False,
) -> RunResult:
    """Run `request` once; artifacts (run.xml, stdout.txt, stderr.txt, result.json) land in `workdir`.

    `named_suppressions`: the request came over the queue, so its suppressions value is a name in the
    settings' suppressions directory, never a path."""
    settings = settings or Settings()
    tool, params = resolve(request)
    suppressions = _suppressions(request, settings.suppressions_dir, named_suppressions)
    sanitizer, refusal = _preflight(request, tool, params, settings)
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
            kernel_filter=request.kernel_filter,
            suppressions=suppressions,
            extra=["--show-backtrace", backtrace]
            if (backtrace := request.show_backtrace or settings.show_backtrace)
            else (),
        )
    )
    done = supervise(
        cmd,
        timeout_s=request.timeout_s or settings.timeout_s,
        max_output_bytes=settings.max_output_bytes,
        env=probe_environment(tool, settings),
        cwd=PROJECT_ROOT,
        xml_path=xml if sanitizer else None,
        max_xml_bytes=settings.max_xml_bytes,
        cancel=cancel_event,
    )
    secrets = secret_values(settings)
    # The probe could have planted symlinks under these names: replace them, never write through them.
    write_artifact(workdir / STDOUT_NAME, scrub(done.stdout.text(), secrets))
    write_artifact(workdir / STDERR_NAME, scrub(done.stderr.text(), secrets))
    write_artifact(workdir / EXIT_CODE_NAME, f"{done.returncode}\n")
    _scrub_file(result_path, secrets)
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
                filtered=bool(request.kernel_filter),
                max_records=settings.max_records,
                max_bytes=settings.max_xml_bytes,
            )
            if xml.exists() and not xml.is_symlink()
            else ParseResult(tool=tool, error=_not_regular(xml))
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
        outcome = Outcome.PROBE_ERROR
        message = "cancelled while running; the probe and every process it started were killed"
    findings = (parsed.findings if parsed else []) + violation_findings(request.probe, tool, probe)
    result = RunResult(
        probe=request.probe,
        tool=tool,
        params=params,
        outcome=outcome,
        message=message,
        records=parsed.records if parsed else 0,
        summary_count=summary.errors if summary else None,
        truncated=bool(parsed and parsed.truncated) or done.xml_capped,
        truncated_at_case=parsed.truncated_at_case if parsed else None,
        filtered=bool(request.kernel_filter) and tool is Tool.INITCHECK,
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
    return scrub_result(result, secrets)


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


def violation_findings(probe_name: str, tool: Tool, probe: ProbeResult | None) -> list[Finding]:
    """A probe's own violated expectations, as Findings (signature: tool|expectation-violation|probe|case)."""
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
    return out


def allocations_of(probe: ProbeResult) -> list[tuple[str, Allocation]]:
    return [(c.id, a) for c in probe.cases for a in c.allocations]


def write_result(result: RunResult, path: Path) -> None:
    path.write_text(json.dumps(result.model_dump(mode="json"), indent=1))
