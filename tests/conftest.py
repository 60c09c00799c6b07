"""Shared fixtures: where the captured data lives, and the replay stand-in."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from service.config import Settings

DATA = Path(__file__).parent / "data"
CAPTURES = DATA / "captures"
RUNS = DATA / "runs"
REPLAY = Path(__file__).parent / "replay" / "compute-sanitizer"
BOX_ROOT = "/work/main"  # the project root on the GPU box when the captures were made
VERSIONS = ("2025.3.1.0", "2026.4.0.0")
# The replay stand-in runs where compute-sanitizer would, with the probe's allowlisted environment: let its own
# variables through (workers started by the integration tests inherit this too).
os.environ.setdefault(
    "CUPROBE_PROBE_ENV_PASS",
    json.dumps(["CUPROBE_REPLAY_CASE", "CUPROBE_REPLAY_TARGET", "CUPROBE_REPLAY_MAP", "CUPROBE_REPLAY_XML_FIRST"]),
)


def capture(version: str, case: str) -> Path:
    return CAPTURES / version / case


def xml_of(case: Path) -> Path:
    plain = case / "run.xml"
    return plain if plain.exists() else case / "run.xml.gz"


@pytest.fixture
def replay_settings() -> Settings:
    """Settings pointing cuprobe at the replay stand-in, paths relative to the box's project root."""
    return Settings(sanitizer_path=REPLAY, source_roots=[BOX_ROOT], timeout_s=60)
