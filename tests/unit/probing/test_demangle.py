"""Runs without host backtraces go without compute-sanitizer's demangler, and find exactly what they found with it.

The sanitizer is the replay stand-in playing back narrow-matmul under initcheck with device backtraces, captured on
the H200 twice: with `--demangle no` and with the sanitizer's default (tests/data/runs/README.md)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing.demangle import holds_mangled_names
from cuprobe.service.probing.runner import PlannedRun, plan_run, run_probe
from cuprobe.service.sanitizer.options import installed_options
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import CAPTURES, RUNS, replaying

NO = RUNS / "narrow-matmul-initcheck-demangle-no-2025.3.1.0"
DEFAULT = RUNS / "narrow-matmul-initcheck-demangle-default-2025.3.1.0"
MANGLED = CAPTURES / "2025.3.1.0"
REQUEST = ProbeRequest(
    probe="narrow-matmul",
    tool=Tool.INITCHECK,
    params={"m": 32, "k": 32, "tile": 32, "n": [1, 2, 3, 31, 33], "variants": ["unguarded", "guarded"]},
    show_backtrace="device",
)
# The same request asking for host frames: its run keeps the demangler (the stand-in replays the capture made with it).
HOST_FRAMES = REQUEST.model_copy(update={"show_backtrace": "host"})


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The stand-in's log of each run's sanitizer options; its help text is reread for each test."""
    path = tmp_path / "sanitizer-options.jsonl"
    monkeypatch.setenv("CUPROBE_REPLAY_LOG", str(path))
    installed_options.cache_clear()
    yield path
    installed_options.cache_clear()


def _case(tmp_path: Path, run: Path, name: str) -> Path:
    """A copy of a captured run, with its sanitizer's help text (what cuprobe asks before using an option)."""
    case = tmp_path / name
    shutil.copytree(run, case)
    shutil.copy(MANGLED / "help.txt", case / "help.txt")
    return case


def _options(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _findings(result: RunResult) -> list[tuple[str, str | None, int]]:
    return sorted((f.signature, f.case, f.count) for f in result.findings)


def test_a_run_without_host_backtraces_goes_without_the_demangler_and_finds_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings, log: Path
) -> None:
    settings = replay_settings.model_copy(update={"confirm": False})
    replaying(monkeypatch, _case(tmp_path, NO, "no"), target=False)
    without = run_probe(REQUEST, workdir=tmp_path / "without", settings=settings)
    replaying(monkeypatch, _case(tmp_path, DEFAULT, "default"), target=False)
    demangled = run_probe(HOST_FRAMES, workdir=tmp_path / "with", settings=settings)

    first, second = _options(log)
    assert first[first.index("--demangle") + 1] == "no" and "--demangle" not in second
    assert "--demangle" in without.command and "--demangle" not in demangled.command
    # the positive control: the unguarded kernel's reads of its padding (3,904 records) are found both ways
    assert without.outcome is demangled.outcome is Outcome.FINDINGS
    assert without.records == demangled.records == 3904
    assert _findings(without) == _findings(demangled) and len(_findings(without)) >= 4
    assert "undemangled" not in without.timing and "demangler" not in without.message


@pytest.mark.parametrize(
    ("backtrace", "skipped"),
    [("device", True), ("no", True), (None, False), ("yes", False), ("host", False)],
)
def test_only_runs_without_host_frames_skip_the_demangler(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    replay_settings: Settings,
    log: Path,
    backtrace: str | None,
    skipped: bool,
) -> None:
    replaying(monkeypatch, _case(tmp_path, NO, "no"), target=False)
    request = REQUEST.model_copy(update={"show_backtrace": backtrace, "params": {"variants": ["unguarded"]}})
    planned = plan_run(request, workdir=tmp_path / "run", settings=replay_settings)
    assert isinstance(planned, PlannedRun)
    assert ("--demangle" in planned.cmd) is skipped


def test_a_mangled_name_in_the_xml_makes_the_run_again_with_the_demangler(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings, log: Path
) -> None:
    # No captured sanitizer wrote a mangled name into its XML; this first attempt's XML is the captured run's with
    # the unguarded kernel's name replaced by the mangled name a C++ kernel of that signature would have: what a
    # sanitizer that kept mangled names there would write. The second attempt replays the capture as it is.
    case = _case(tmp_path, DEFAULT, "default")
    text = gzip.decompress((case / "run.xml.gz").read_bytes())
    name = b"narrow_matmul_unguarded_f32"
    renamed = text.replace(b"<func>" + name + b"</func>", b"<func>_Z27" + name + b"PKfS0_Pfiii</func>")
    assert renamed != text
    (case / "run.demangle-no.xml").write_bytes(renamed)
    replaying(monkeypatch, case, target=False)
    settings = replay_settings.model_copy(update={"confirm": False})
    result = run_probe(REQUEST, workdir=tmp_path / "run", settings=settings)

    first, second = _options(log)
    assert "--demangle" in first and "--demangle" not in second
    assert "run again with the sanitizer's demangler" in result.message
    assert "undemangled" in result.timing and "--demangle" not in result.command
    replaying(monkeypatch, _case(tmp_path, DEFAULT, "reference"), target=False)
    reference = run_probe(HOST_FRAMES, workdir=tmp_path / "reference-run", settings=settings)
    assert _findings(result) == _findings(reference) and result.records == 3904


def test_captured_xml_names_functions_alike_with_the_demangler_or_without(tmp_path: Path) -> None:
    for run in (NO, DEFAULT):
        xml = tmp_path / run.name
        xml.write_bytes(gzip.decompress((run / "run.xml.gz").read_bytes()))
        assert not holds_mangled_names(xml)
    # a C++ template kernel (demo::scale<float>): the XML names it `scale` both ways, and only the console differs
    parsed = {}
    for mode in ("no", "default"):
        folder = MANGLED / f"initcheck_mangled_demangle_{mode}"
        assert not holds_mangled_names(folder / "run.xml")
        result = parse_xml(folder / "run.xml", tool=Tool.INITCHECK)
        parsed[mode] = sorted((f.signature, f.count) for f in result.findings)
        console = (folder / "stdout.txt").read_text()
        assert ("_ZN4demo5scaleIfEEvPKT_PS1_iS1_" in console) is (mode == "no")
    assert parsed["no"] == parsed["default"] and parsed["no"][0][1] == 64
    mangled = tmp_path / "mangled.xml"
    mangled.write_text("<ComputeSanitizerOutput><record><where><func>_ZN4demo5scaleIfEEvPKT_PS1_iS1_</func></where>"
                       "</record></ComputeSanitizerOutput>")
    assert holds_mangled_names(mangled)
    assert not holds_mangled_names(tmp_path / "missing.xml")
