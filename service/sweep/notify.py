"""Tell a webhook about a non-empty diff: one JSON POST fit for a chat or issue-tracker hook."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import httpx

from cuprobe.service.models.bisect import Bisection, BisectStep
from cuprobe.service.sweep.diff import SweepDiff

log = logging.getLogger(__name__)


def run_link(step: BisectStep, dashboard: str | None) -> str:
    """Where the run that proved a bisect's commit is: the job's dashboard page, else the folder that holds it."""
    run = step.runs[0] if step.runs else ""
    if run.startswith("job:") and dashboard:
        return f"{dashboard.rstrip('/')}/ui/jobs/{run.removeprefix('job:')}"
    return run.removeprefix("job:")


def culprit(bisection: Bisection | None, dashboard: str | None = None) -> str:
    """What a bisect said about one item: the commit (hash, author, title) and the run that proved it, or why none."""
    if bisection is None:
        return ""
    word = "first seen in" if bisection.direction == "new" else "fixed by"
    if bisection.state == "found" and bisection.first is not None:
        proof = bisection.proof
        proved = f"; proved by {run_link(proof, dashboard)}" if proof is not None and proof.runs else ""
        return f"{word} {bisection.first.line()} ({len(bisection.steps)} step(s)){proved}"
    return f"no commit named: {bisection.message}"


def payload(
    diff: SweepDiff,
    report_url: str | None = None,
    bisections: Sequence[Bisection] = (),
    dashboard: str | None = None,
) -> dict[str, Any]:
    """`text` for chat hooks (Slack, Mattermost), `title`/`body` for issue trackers, and the diff itself; each new or
    fixed finding of a repository's test with the commit its bisect named."""
    counts = {k: len(getattr(diff, k)) for k in ("new", "fixed", "flaky", "persisting", "unverified")}
    title = f"cuprobe sweep {diff.definition}: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    found: dict[tuple[str, str, str], Bisection] = {(b.direction, b.case, b.signature): b for b in bisections}

    def named(direction: str, case: str, signature: str) -> str:
        said = culprit(found.get((direction, case, signature)), dashboard)
        return f"\n  {said}" if said else ""

    lines = [
        f"- new: {i.case} {i.signature} ({i.count}) {i.explained}".rstrip() + named("new", i.case, i.signature)
        for i in diff.new[:20]
    ]
    lines += [
        f"- fixed: {i.case} {i.signature} {i.explained}".rstrip() + named("fixed", i.case, i.signature)
        for i in diff.fixed[:20]
    ]
    lines += [f"- flaky: {i.case} {i.signature} {i.explained}".rstrip() for i in diff.flaky[:20] if not i.again]
    lines += [f"- unverified: {i.case} {i.signature}: {i.explained}" for i in diff.unverified[:20]]
    if diff.version_change:
        lines.insert(0, f"versions changed: {diff.version_change}")
    if report_url:
        lines.append(f"report: {report_url}")
    body = "\n".join(lines)
    return {
        "text": f"{title}\n{body}",
        "title": title,
        "body": body,
        "counts": counts,
        "diff": diff.model_dump(mode="json"),
        "bisections": [b.model_dump(mode="json") for b in bisections],
    }


def webhook_problem(url: str) -> str | None:
    """Why `url` cannot be posted to (not an http(s) URL httpx can read), or None."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        return f"{url!r} is not a URL: {exc}"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return f"{url!r} is not an http(s) URL with a host"
    return None


def notify(
    diff: SweepDiff,
    url: str | None,
    bisections: Sequence[Bisection] = (),
    *,
    dashboard: str | None = None,
    timeout_s: float = 10.0,
) -> str | None:
    """POST the diff to `url` when it changed anything; what happened, or None when nothing was sent.

    Never raises: the sweep is stored before this runs, and a webhook that is down must not lose or fail it.
    """
    if not url or not diff.changed:
        return None
    if problem := webhook_problem(url):
        log.warning("sweep webhook not sent: %s", problem)
        return f"webhook not sent: {problem}"
    try:
        response = httpx.post(url, json=payload(diff, None, bisections, dashboard), timeout=timeout_s)
    except httpx.HTTPError as exc:
        log.warning("sweep webhook %s unreachable: %s", url, exc)
        return f"webhook {url} unreachable: {exc}"
    if response.is_error:
        log.warning("sweep webhook %s answered %s", url, response.status_code)
        return f"webhook {url} answered HTTP {response.status_code}: {response.text[:200]}"
    return f"webhook {url} notified (HTTP {response.status_code})"
