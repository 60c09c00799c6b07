"""Tell a webhook about a non-empty diff: one JSON POST fit for a chat or issue-tracker hook."""

from __future__ import annotations

from typing import Any

import httpx

from service.sweep.diff import SweepDiff


def payload(diff: SweepDiff, report_url: str | None = None) -> dict[str, Any]:
    """`text` for chat hooks (Slack, Mattermost), `title`/`body` for issue trackers, and the diff itself."""
    counts = {k: len(getattr(diff, k)) for k in ("new", "fixed", "flaky", "persisting", "unverified")}
    title = f"cuprobe sweep {diff.definition}: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    lines = [f"- new: {i.case} {i.signature} ({i.count}) {i.note}".rstrip() for i in diff.new[:20]]
    lines += [f"- fixed: {i.case} {i.signature}" for i in diff.fixed[:20]]
    lines += [f"- flaky: {i.case} {i.signature} {i.note}" for i in diff.flaky[:20]]
    lines += [f"- unverified: {i.case} {i.signature}: {i.note}" for i in diff.unverified[:20]]
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
    }


def notify(diff: SweepDiff, url: str | None, *, timeout_s: float = 10.0) -> int | None:
    """POST the diff to `url` when it changed anything; the HTTP status, or None when nothing was sent."""
    if not url or not diff.changed:
        return None
    response = httpx.post(url, json=payload(diff), timeout=timeout_s)
    response.raise_for_status()
    return response.status_code
