"""Shared fixtures: where the captured data lives, and the replay stand-in."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from cuprobe.service.config import Settings

DATA = Path(__file__).parent / "data"
CAPTURES = DATA / "captures"
RUNS = DATA / "runs"
REPLAY = Path(__file__).parent / "replay" / "compute-sanitizer"
REPLAY_PYTHON = Path(__file__).parent / "replay" / "python-bare"
BOX_ROOT = "/work/main"  # the project root on the GPU box when the captures were made
VERSIONS = ("2025.3.1.0", "2026.4.0.0")
# The replay stand-in runs where compute-sanitizer would, with the probe's allowlisted environment: let its own
# variables through (workers started by the integration tests inherit this too).
os.environ.setdefault(
    "CUPROBE_PROBE_ENV_PASS",
    json.dumps(
        [
            "CUPROBE_REPLAY_CASE",
            "CUPROBE_REPLAY_TARGET",
            "CUPROBE_REPLAY_MAP",
            "CUPROBE_REPLAY_XML_FIRST",
            "CUPROBE_REPLAY_STALL_ONCE",
            "CUPROBE_REPLAY_WAIT_BARE",
            "CUPROBE_REPLAY_BARE",
            "CUPROBE_REPLAY_BARE_LOG",
            "CUPROBE_REPLAY_BARE_SLEEP",
            "CUPROBE_REPLAY_BARE_DROP",
            "CUPROBE_REPLAY_PYTHON",
            "CUPROBE_REPLAY_LOG",
            "CUPROBE_REPLAY_WHEN",
        ]
    ),
)


def capture(version: str, case: str) -> Path:
    return CAPTURES / version / case


def xml_of(case: Path) -> Path:
    plain = case / "run.xml"
    return plain if plain.exists() else case / "run.xml.gz"


def xml_bytes(case: Path) -> bytes:
    """A captured case's run.xml as the sanitizer wrote it (gunzipped where it is kept gzipped)."""
    xml = xml_of(case)
    return gzip.decompress(xml.read_bytes()) if xml.suffix == ".gz" else xml.read_bytes()


def previous_parser_cases() -> list[Path]:
    """The captured cases with a run.xml that bench/previous_parser reads as cuprobe does: all but those with kinds
    it did not know, the launch dumps' LaunchInfo (it took them for findings; tests/unit/sanitizer/test_launch_dump.py
    covers those) and initcheck's InitcheckApiError (it gave them no tool; test_host_api_records.py)."""
    cases = sorted(p.parent for p in CAPTURES.glob("*/*/run.xml*"))
    unknown = (b"<kind>LaunchInfo</kind>", b"<kind>InitcheckApiError</kind>")
    return [c for c in cases if not any(kind in xml_bytes(c) for kind in unknown)]


def replaying(monkeypatch: pytest.MonkeyPatch, case: Path, *, target: bool) -> None:
    """Runs here replay `case` (captured on the H200, whose GPU facts they report; the only mock), running the
    target program itself when `target`."""
    from cuprobe.service.probing import runner
    from cuprobe.service.probing.environment import GpuFacts
    from cuprobe.service.sanitizer.locate import _version

    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    from cuprobe.service.sanitizer.options import installed_options

    _version.cache_clear()  # one stand-in binary answers with each capture's version
    installed_options.cache_clear()  # and with its help text
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(case))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1" if target else "0")


@pytest.fixture
def replay_settings() -> Settings:
    """Settings pointing cuprobe at the replay stand-in, paths relative to the box's project root."""
    return Settings(sanitizer_path=REPLAY, source_roots=[BOX_ROOT], timeout_s=60)
