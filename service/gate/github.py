"""GitHub Actions workflow commands (`::error file=..,line=..::`) for new findings and what could not run."""

from __future__ import annotations

from cuprobe.service.gate.verdict import GateReport


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(report: GateReport) -> list[str]:
    """One `::error` per failing finding (at its file and line when known) and per run that could not run; a
    `::notice` per blind spot of the tool and benign read (shown, never failing)."""
    out = []
    for item in report.findings:
        if not item.fails:
            if item.status.fails:
                f = item.finding
                where = f"file={_prop(f.file)}" + (f",line={f.line}" if f.line else "") + "," if f.file else ""
                title = _prop(f"cuprobe {f.tool.value}: {f.kind} ({item.label_confirmed})")
                reason = f.confirmation_evidence.reason if f.confirmation_evidence else ""
                out.append(f"::notice {where}title={title}::{_data(f'{f.message} — {reason}')}")
            continue
        f = item.finding
        props = [f"title={_prop(f'cuprobe {f.tool.value}: {f.kind} ({item.label_confirmed})')}"]
        if f.file:
            props.insert(0, f"file={_prop(f.file)}" + (f",line={f.line}" if f.line else ""))
        message = f"{f.message} — {item.entry}, seen {item.seen}/{item.repeats}, signature {f.signature}"
        out.append(f"::error {','.join(props)}::{_data(message)}")
    for n in report.not_run:
        title = _prop(f"cuprobe gate: {n.label} could not run ({n.result.outcome.value})")
        out.append(f"::error title={title}::{_data(n.result.message)}")
    for c in report.failed_controls:
        title = _prop(f"cuprobe gate: positive control {c.entry} came back clean")
        out.append(f"::error title={title}::{_data(f'case {c.case}: {c.reason}')}")
    return out
