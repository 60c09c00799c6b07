"""Artifacts are served with the content type of their kind, the same on every server."""

from __future__ import annotations

from cuprobe.service.db.artifacts import NAMES, content_type


def test_each_artifact_has_its_content_type() -> None:
    assert {name: content_type(name) for name in NAMES} == {
        "run.xml": "application/xml",
        "stdout.txt": "text/plain",
        "stderr.txt": "text/plain",
        "result.json": "application/json",
        "replay-growth.svg": "image/svg+xml",
    }
