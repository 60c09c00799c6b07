"""A team's own pytest suite through the gate, as it is: its own interpreter without cuprobe's dependencies, its
own PYTHONPATH and `probes`/`kernels` packages, each file in one process, every result named after its test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cuprobe.probes.pytest_run import ADDED_PYTHONPATH_ENV, PLUGIN, PLUGIN_DIR, plugin_env, without_added_path
from cuprobe.service.config import Settings
from cuprobe.service.gate.runs import EntryRuns, run_local
from cuprobe.service.gate.suite import Suite, SuiteEntry, expand
from cuprobe.service.gate.verdict import judge
from cuprobe.service.models import Outcome, RunResult
from cuprobe.service.owntests.discover import project_python
from tests.conftest import VERSIONS, capture, replaying
from tests.project_env import bare_python, project


@pytest.fixture(scope="module")
def user_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bare_python(tmp_path_factory.mktemp("user-venv") / "venv")


def _suite(root: Path, python: Path, tool: str = "none", **entry: object) -> Suite:
    spec = {"name": "ops", "kind": "pytest", "tool": tool, "paths": ["tests"], "cwd": str(root),
            "python": str(python), "env": {"PYTHONPATH": "src:."}, **entry}
    return Suite.model_validate({"name": "own", "test": [spec]})


def _by_case(runs: list[EntryRuns]) -> dict[str, RunResult]:
    return {(r.entry.case or r.entry.name): r.results[0] for r in runs}


def test_cuprobes_additions_merge_with_the_tests_own_environment() -> None:
    env = plugin_env({"PYTHONPATH": "src:.", "PYTEST_PLUGINS": "theirs", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
                     "caching", Path("/tmp/report.jsonl"))
    assert env["PYTHONPATH"] == f"src:.:{PLUGIN_DIR}" and env["PYTEST_PLUGINS"] == f"theirs,{PLUGIN}"
    assert env["CUPROBE_ALLOCATOR"] == "caching" and "PYTORCH_NO_CUDA_MEMORY_CACHING" not in env
    assert plugin_env({}, "no-caching", Path("r"))["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    # cuprobe's own import root, put first for the probe process, never reaches the test
    assert without_added_path({"PYTHONPATH": "/cuprobe:/theirs", ADDED_PYTHONPATH_ENV: "/cuprobe"}) == {
        "PYTHONPATH": "/theirs"}
    assert without_added_path({"PYTHONPATH": "/cuprobe", ADDED_PYTHONPATH_ENV: "/cuprobe"}) == {}
    assert without_added_path({"PYTHONPATH": "/theirs:/cuprobe", ADDED_PYTHONPATH_ENV: "/cuprobe"}) == {
        "PYTHONPATH": "/theirs:/cuprobe"}


def test_a_suite_in_its_own_interpreter_runs_each_file_once_and_names_every_test(
    tmp_path: Path, user_python: Path
) -> None:
    root = project(tmp_path / "proj")
    suite = expand(_suite(root, user_python))
    assert [f.path for f in suite.files] == ["tests/test_ops.py"]  # test_one.py has one test: its own process
    files: list[tuple[SuiteEntry, RunResult]] = []
    runs = run_local(
        suite, tmp_path / "work", Settings(timeout_s=120), on_file=lambda e, r, res: files.append((e, res))
    )
    results = _by_case(runs)
    assert len(files) == 1 and files[0][1].outcome is Outcome.FINDINGS  # one process ran test_ops.py's three tests
    assert results["tests/test_ops.py::test_double"].outcome is Outcome.CLEAN
    assert results["tests/test_ops.py::test_scale"].outcome is Outcome.CLEAN
    wrong = results["tests/test_ops.py::test_wrong"]
    assert wrong.outcome is Outcome.FINDINGS and "assert 4 == 5" in wrong.message
    (finding,) = wrong.findings
    assert finding.case == "tests/test_ops.py::test_wrong" and finding.kind == "expectation-violation"
    assert results["tests/test_one.py::test_alone"].outcome is Outcome.CLEAN
    report = judge(suite, runs, None)
    assert report.exit_code == 1 and [f.finding.case for f in report.findings] == ["tests/test_ops.py::test_wrong"]


def test_per_test_runs_each_test_in_its_own_process_with_the_same_results(tmp_path: Path, user_python: Path) -> None:
    root = project(tmp_path / "proj")
    suite = expand(_suite(root, user_python, per="test"))
    assert suite.files == []
    results = _by_case(run_local(suite, tmp_path / "work", Settings(timeout_s=120)))
    assert {k: v.outcome for k, v in results.items()} == {
        "tests/test_ops.py::test_double": Outcome.CLEAN,
        "tests/test_ops.py::test_scale": Outcome.CLEAN,
        "tests/test_ops.py::test_wrong": Outcome.FINDINGS,
        "tests/test_one.py::test_alone": Outcome.CLEAN,
    }


def test_a_plugin_that_cannot_load_is_cuprobes_failure_never_the_tests(tmp_path: Path, user_python: Path) -> None:
    root = project(tmp_path / "proj")
    # A module of the project's own that shadows cuprobe's plugin: it cannot load, and nothing is judged.
    (root / "_cuprobe_pytest.py").write_text("raise ImportError('not cuprobe')\n")
    results = _by_case(run_local(expand(_suite(root, user_python, per="test")), tmp_path / "work",
                                 Settings(timeout_s=120)))
    for result in results.values():
        assert result.outcome is Outcome.PROBE_ERROR and not result.findings
        assert "cuprobe's pytest plugin (_cuprobe_pytest) did not load" in result.message
        assert "cuprobe's failure, not the test's" in result.message


def test_a_skipped_test_in_a_file_did_not_run(tmp_path: Path, user_python: Path) -> None:
    root = project(tmp_path / "proj")
    (root / "tests" / "test_ops.py").write_text(
        "import pytest\n\n\ndef test_ok():\n    pass\n\n\n"
        "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n\n\n"
        "@pytest.mark.xfail(run=False)\ndef test_never():\n    pass\n\n\n"
        "@pytest.mark.xfail\ndef test_known():\n    assert False\n"
    )
    results = _by_case(run_local(expand(_suite(root, user_python)), tmp_path / "work", Settings(timeout_s=120)))
    assert results["tests/test_ops.py::test_ok"].outcome is Outcome.CLEAN
    assert results["tests/test_ops.py::test_known"].outcome is Outcome.CLEAN  # its body ran and failed as expected
    for name in ("test_later", "test_never"):
        said = results[f"tests/test_ops.py::{name}"]
        assert said.outcome is Outcome.PROBE_ERROR and "did not run" in said.message


@pytest.mark.parametrize("alone_shows_it", [True, False])
def test_a_file_with_a_sanitizer_record_runs_each_test_alone(
    tmp_path: Path, user_python: Path, monkeypatch: pytest.MonkeyPatch, alone_shows_it: bool
) -> None:
    """The file's process (a real pytest run, replayed with memcheck's out-of-bounds capture from the H200) shows a
    record no test is named in; each test then runs alone, and the one whose own run shows it is named."""
    root = project(tmp_path / "proj")
    version = VERSIONS[0]
    replaying(monkeypatch, capture(version, "memcheck_ok"), target=True)
    oob = {"case": str(capture(version, "memcheck_oob")), "target": True}
    mapping = {"command memcheck tests/test_ops.py": oob}
    if alone_shows_it:
        mapping["command memcheck tests/test_ops.py::test_scale"] = oob
    monkeypatch.setenv("CUPROBE_REPLAY_MAP", json.dumps(mapping))
    suite = expand(_suite(root, user_python, tool="memcheck"))
    settings = Settings(sanitizer_path=Path("tests/replay/compute-sanitizer").resolve(), timeout_s=120)
    runs = run_local(suite, tmp_path / "work", settings, slots=2)
    results = _by_case(runs)
    assert results["tests/test_ops.py::test_double"].outcome is Outcome.CLEAN
    assert results["tests/test_ops.py::test_wrong"].outcome is Outcome.FINDINGS
    scale = results["tests/test_ops.py::test_scale"]
    if alone_shows_it:
        assert scale.outcome is Outcome.FINDINGS
        assert scale.records > 0 and any(f.kind != "expectation-violation" for f in scale.findings)
        assert len(runs) == 4  # the file's own run is explained by its test: not kept beside them
    else:
        assert scale.outcome is Outcome.CLEAN
        (file_runs,) = [r for r in runs if r.entry.name.startswith("ops.file")]
        said = file_runs.results[0]
        assert said.outcome is Outcome.FINDINGS and said.records > 0
        assert "none of its tests shows it when run alone" in said.message
        assert judge(suite, runs, None).exit_code == 1


def test_tests_run_side_by_side_in_k_slots(tmp_path: Path, user_python: Path) -> None:
    """Two tests that each wait for the other to have started: they pass only when run at the same time."""
    (tmp_path / "tests").mkdir()
    meet = tmp_path / "meet"
    meet.mkdir()
    body = (
        "import pathlib, time\nMEET = pathlib.Path({meet!r})\n\n\ndef test_{me}():\n    (MEET / '{me}').touch()\n"
        "    deadline = time.monotonic() + 60\n    while not (MEET / '{other}').exists():\n"
        "        assert time.monotonic() < deadline, 'the other test never started beside this one'\n"
        "        time.sleep(0.05)\n"
    )
    for me, other in (("a", "b"), ("b", "a")):
        (tmp_path / "tests" / f"test_{me}.py").write_text(body.format(meet=str(meet), me=me, other=other))
    suite = expand(_suite(tmp_path, user_python))
    results = _by_case(run_local(suite, tmp_path / "work", Settings(timeout_s=120), slots=2))
    assert {r.outcome for r in results.values()} == {Outcome.CLEAN}, [r.message for r in results.values()]


def test_the_projects_own_virtual_environment_runs_its_tests(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    (tmp_path / "tests").mkdir()
    assert project_python(str(tmp_path / "tests"), {}) == str(tmp_path / ".venv" / "bin" / "python")
    os.remove(tmp_path / ".venv" / "bin" / "python")
    active = tmp_path / "active"
    (active / "bin").mkdir(parents=True)
    (active / "bin" / "python").write_text("")
    assert project_python(str(tmp_path), {"VIRTUAL_ENV": str(active)}) == str(active / "bin" / "python")


def test_the_own_suite_benchmark_runs_at_a_small_size() -> None:
    """bench/own_suite.py --smoke: a generated project through every mode but the sanitizer's, its own checks on."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, str(root / "bench" / "own_suite.py"), "--smoke"], cwd=root,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| cuprobe file |" in done.stdout and "3 passed" in done.stdout
