"""SARIF 2.1.0: one rule per finding kind, results at the kernel's file and line, fingerprints from the signature."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cuprobe import __version__
from cuprobe.service.gate.verdict import GateFinding, GateReport, Status
from cuprobe.service.models import ExitCode

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "cuprobeSignature/v1"


def fingerprint(signature: str) -> str:
    """A stable digest of the signature (no addresses or thread ids), so reruns update, not duplicate, alerts."""
    return hashlib.sha256(signature.encode()).hexdigest()


def _relative(path: Path) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd())).as_posix()
    except ValueError:
        return path.as_posix()


def _location(item: GateFinding, suite_file: str) -> dict[str, Any]:
    f = item.finding
    logical = [{"name": f.kernel, "kind": "function"}] if f.kernel else []
    if f.file:
        region = {"startLine": f.line} if f.line else {}
        physical: dict[str, Any] = {"artifactLocation": {"uri": f.file}}
        if region:
            physical["region"] = region
    else:  # no source line (a probe's own observation): point at the suite entry that ran it
        physical = {"artifactLocation": {"uri": suite_file}, "region": {"startLine": 1}}
    out: dict[str, Any] = {"physicalLocation": physical}
    if logical:
        out["logicalLocations"] = logical
    return out


def _result(item: GateFinding, rule_index: int, suite_file: str) -> dict[str, Any]:
    f = item.finding
    text = (
        f"{f.message} [{item.label_confirmed}; {item.entry}; seen {item.seen}/{item.repeats}; {f.count} occurrence(s)]"
    )
    result: dict[str, Any] = {
        "ruleId": f.kind,
        "ruleIndex": rule_index,
        # Blind spots of the tool and benign reads are notes: shown in every output, never failing.
        "level": "error" if item.fails else "note",
        "message": {"text": text},
        "locations": [_location(item, suite_file)],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f.signature)},
        "baselineState": "new" if item.status is Status.NEW else "unchanged",
        "properties": {
            "signature": f.signature,
            "status": item.status.value,
            "tool": f.tool.value,
            "suiteEntry": item.entry,
            "seen": f"{item.seen}/{item.repeats}",
            "sanitizerVersion": f.sanitizer_version,
            "sanitizerVersionChanged": item.sanitizer_change,
            "case": f.case,
            "confirmation": f.confirmation.value if f.confirmation else None,
            "confirmationEvidence": (
                f.confirmation_evidence.model_dump(mode="json") if f.confirmation_evidence else None
            ),
        },
    }
    if item.status is Status.BASELINED and item.baseline:
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": item.baseline.reason}]
    return result


def build(report: GateReport) -> dict[str, Any]:
    """The SARIF log for `report`; control hits are not results (they are planted, not the code's)."""
    items = [f for f in report.findings if f.status is not Status.EXPECTED]
    kinds = sorted({f.finding.kind for f in items})
    rules = []
    for kind in kinds:
        example = next(f.finding for f in items if f.finding.kind == kind)
        rules.append(
            {
                "id": kind,
                "name": "".join(part.capitalize() for part in kind.split("-")),
                "shortDescription": {"text": f"compute-sanitizer {example.tool.value}: {kind}"},
                "defaultConfiguration": {"level": "error"},
                "properties": {"tool": example.tool.value},
            }
        )
    suite_file = _relative(report.suite.path)
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{n.label} repeat {n.repeat + 1}: {n.result.outcome.value}: {n.result.message}"},
        }
        for n in report.not_run
    ] + [
        {
            "level": "error",
            "message": {"text": f"{c.entry} case {c.case}: positive control came back clean: {c.reason}"},
        }
        for c in report.failed_controls
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cuprobe",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": report.exit_code != ExitCode.NOT_RUN,
                        "exitCode": report.exit_code,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_result(f, kinds.index(f.finding.kind), suite_file) for f in items],
                "properties": {
                    "suite": report.suite.name,
                    "verdict": report.verdict,
                    "summary": report.summary_line(),
                    "confirmations": report.confirmation_counts(),
                },
            }
        ],
    }


def write(report: GateReport, path: Path) -> None:
    path.write_text(json.dumps(build(report), indent=1))
