"""The HTML report of a sweep: summary, diff, plots (inline SVG) and the per-case table."""

from __future__ import annotations

from html import escape

from cuprobe.service.models.sweep import Sweep
from cuprobe.service.reports.markdown import FIRST_SWEEP, ran_on
from cuprobe.service.reports.plots import findings_by_out_features, throughput_by_dtype
from cuprobe.service.sweep.diff import SweepDiff
from cuprobe.service.sweep.notify import culprit

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.findings{background:#fde}"
    ".clean{background:#efe}.bad{background:#fc8}"
)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _row(cells: list[object], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<tr{attr}>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>"


def html(sweep: Sweep, diff: SweepDiff | None = None) -> str:
    """A self-contained page: no scripts, no external files."""
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(sweep.counts().items()))
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>cuprobe sweep {escape(sweep.definition)}</title>"
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Sweep {escape(sweep.definition)} <small>{escape(sweep.id)}</small></h1>",
        f"<p>{len(sweep.cases)} cases in {len(sweep.processes)} processes; wall {sweep.wall_s} s; "
        f"{escape(ran_on(sweep))}; {escape(counts)}</p>",
    ]
    if sweep.source:
        where = f"{sweep.source.url} {sweep.source.branch} at {sweep.source.commit.line()}"
        parts.append(f"<p>Repository {escape(where)}</p>")
    if diff is not None:
        since = f"<h2>Changes since {escape(diff.previous)}</h2>" if diff.previous else None
        parts.append(since or f"<h2>Changes</h2><p>{FIRST_SWEEP}</p>")
        if diff.version_change:
            parts.append(f"<p><b>Versions changed:</b> {escape(diff.version_change)}</p>")
        parts.append("<table><tr><th>change</th><th>case</th><th>signature</th><th>count</th><th>note</th></tr>")
        for name in ("new", "fixed", "flaky", "unverified", "persisting"):
            for item in getattr(diff, name):
                parts.append(_row([name, item.case, item.signature, item.count, item.explained]))
        parts.append("</table>")
    parts += _commits(sweep)
    for title, svg in (
        ("Sanitizer records per case against out_features", findings_by_out_features(sweep)),
        ("Throughput per dtype", throughput_by_dtype(sweep)),
    ):
        if svg:
            parts += [f"<h2>{title}</h2>", svg]
    parts.append(
        "<h2>Processes</h2><table><tr><th>#</th><th>probe</th><th>tool</th><th>cases</th><th>batched</th>"
        "<th>control fired</th><th>outcomes</th><th>seconds</th><th>warm start</th><th>stalled attempts</th>"
        "<th>why one case</th></tr>"
    )
    for p in sweep.processes:
        fired = "/".join("yes" if f else "NO" for f in p.control_fired) or "-"
        parts.append(
            _row(
                [
                    p.index,
                    p.probe,
                    p.tool,
                    p.cases,
                    _yes(p.batched),
                    fired,
                    " ".join(o.value for o in p.outcomes),
                    " ".join(f"{d:.1f}" for d in p.durations_s),
                    " ".join("yes" if w else "no" for w in p.warm) if any(p.warm) else "",
                    " ".join(str(n) for n in p.stalls) if any(p.stalls) else "",
                    "" if p.tool == "none" else p.reason,
                ],
                "bad" if "NO" in fired else "",
            )
        )
    parts.append(
        "</table><h2>Cases</h2><table><tr><th>case</th><th>outcome</th><th>records</th><th>findings</th>"
        "<th>flaky</th><th>truncated</th><th>message</th></tr>"
    )
    for c in sweep.cases:
        cls = "clean" if c.outcome == "clean" else "findings" if c.outcome == "findings" else "bad"
        sigs = "; ".join(f"{f.signature} x{f.count}" + (f" ({f.seen})" if f.seen else "") for f in c.findings)
        parts.append(
            _row([c.key, c.outcome.value, c.records, sigs, _yes(c.flaky), _yes(c.truncated), c.message], cls)
        )
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _commits(sweep: Sweep) -> list[str]:
    """Each bisect: the commit it named (or why none) and every commit it tested with what each gave."""
    if not sweep.bisections:
        return []
    parts = ["<h2>Commits</h2>"]
    for b in sweep.bisections:
        parts.append(
            f"<h3>{escape(b.direction)} {escape(b.case)} <code>{escape(b.signature)}</code></h3>"
            f"<p>{escape(culprit(b))}; {b.commits} commit(s), {len(b.steps)} step(s), {b.gpu_s / 60:.1f} GPU min</p>"
            "<table><tr><th>commit</th><th>title</th><th>verdict</th><th>seen</th><th>seconds</th><th>what it gave</th>"
            "</tr>"
        )
        for step in b.steps:
            cls = "findings" if step.verdict == "shows" else "clean" if step.verdict == "clean" else "bad"
            cells: list[object] = [step.commit.short, step.commit.title, step.verdict, step.seen, f"{step.wall_s:.1f}"]
            cells.append(step.reason)
            parts.append(_row(cells, cls))
        parts.append("</table>")
    return parts
