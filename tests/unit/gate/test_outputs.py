"""The gate's outputs: SARIF valid against the OASIS 2.1.0 schema, JUnit that junitparser reads, Markdown tables
that render, and GitHub annotations at the kernel's file and line."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt
from typer.testing import Result

from cuprobe.service.config import Settings
from cuprobe.service.gate import junit
from cuprobe.service.gate.runs import run_local
from cuprobe.service.gate.suite import Suite, expand
from cuprobe.service.gate.verdict import judge
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from tests.conftest import DATA, VERSIONS, capture
from tests.unit.gate.conftest import (
    BASE_SUITE,
    PRODUCT,
    UNINIT_SIGNATURE,
    VIOLATE,
    VIOLATION_SIGNATURE,
    Gate,
    run_gate,
    use_replay,
)

HANG = '\n[[probe]]\nname = "hangs"\nprobe = "selftest"\ntool = "none"\ntimeout_s = 2\n'
HANG += 'params = { behaviour = "hang" }\n'
SUITE = BASE_SUITE + VIOLATE + PRODUCT + HANG


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Result, Path]]:
    """One gate run with every kind of row: baselined, new (with and without a source line), a control, a timeout."""
    where = tmp_path_factory.mktemp("outputs")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GITHUB_ACTIONS", raising=False)
        use_replay(mp)
        assert run_gate(where, BASE_SUITE + PRODUCT, "--update-baseline").exit_code == 0  # uninit-product known
        result = run_gate(where, SUITE, "--junit", str(where / "gate.xml"), "--sarif", str(where / "gate.sarif"))
    assert result.exit_code == 3, result.output
    yield result, where


def test_sarif_validates_against_the_sarif_2_1_0_schema(outputs: tuple[Result, Path]) -> None:
    _, where = outputs
    log = json.loads((where / "gate.sarif").read_text())
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"  # the schema really checks what we write
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(broken)


def test_sarif_rules_locations_and_fingerprints(outputs: tuple[Result, Path]) -> None:
    _, where = outputs
    (run,) = json.loads((where / "gate.sarif").read_text())["runs"]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [
        "expectation-violation",
        "uninitialized-global-read",
    ]
    by_signature = {r["properties"]["signature"]: r for r in run["results"]}
    assert set(by_signature) == {VIOLATION_SIGNATURE, UNINIT_SIGNATURE}  # the control's hit is not a result
    uninit = by_signature[UNINIT_SIGNATURE]
    physical = uninit["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": "kernels/uninit_read.cu"}, "region": {"startLine": 6}}
    assert uninit["partialFingerprints"] == {
        "cuprobeSignature/v1": hashlib.sha256(UNINIT_SIGNATURE.encode()).hexdigest()
    }
    assert uninit["baselineState"] == "unchanged" and uninit["suppressions"][0]["status"] == "accepted"
    new = by_signature[VIOLATION_SIGNATURE]
    assert (new["level"], new["baselineState"]) == ("error", "new")
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 3
    assert "hangs repeat 1: timeout" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_fingerprints_are_stable_across_reruns(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    prints = []
    for name in ("a.sarif", "b.sarif"):
        gate(BASE_SUITE + PRODUCT, "--sarif", str(tmp_path / name))
        results = json.loads((tmp_path / name).read_text())["runs"][0]["results"]
        prints.append([r["partialFingerprints"] for r in results])
    assert prints[0] == prints[1] and len(prints[0]) == 1


def test_junit_one_testcase_per_probe_case_and_errors_for_what_could_not_run(outputs: tuple[Result, Path]) -> None:
    _, where = outputs
    xml = JUnitXml.fromfile(str(where / "gate.xml"))
    cases = {(suite.name.split(".")[-1], case.name): case for suite in xml for case in suite}
    assert set(cases) == {
        ("initcheck-control", "n=1024,k=1000"),
        ("selftest-initcheck", "ok"),
        ("selftest-bare", "violate"),
        ("uninit-product", "n=1024,k=1000"),
        ("hangs", "(run)"),
    }
    assert cases[("initcheck-control", "n=1024,k=1000")].is_passed
    assert cases[("uninit-product", "n=1024,k=1000")].is_passed  # baselined
    (failure,) = cases[("selftest-bare", "violate")].result
    assert isinstance(failure, Failure) and VIOLATION_SIGNATURE in (failure.text or "")
    (error,) = cases[("hangs", "(run)")].result
    assert isinstance(error, Error) and error.type == "timeout" and "wall-clock limit" in (error.message or "")
    assert not any(isinstance(r, Skipped) for case in cases.values() for r in case.result)


def test_markdown_renders_as_headings_and_well_formed_tables(outputs: tuple[Result, Path]) -> None:
    _, where = outputs
    tokens = MarkdownIt("commonmark").enable("table").parse((where / "summary.md").read_text())
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [
        "cuprobe gate: gate-test — exit 3 (could not run)",
        "Runs by outcome",
        "New findings (1)",
        "Blind spots of the tool (shown, never failing) (0)",
        "Benign reads: never written, masked out of the result (shown, never failing) (0)",
        "Fixed (0)",
        "Could not run (1)",
        "Baselined (1)",
        "Positive controls fired (1)",
    ]
    tables, cells = [], 0
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append(0)
        elif token.type in ("th_open", "td_open"):
            tables[-1][-1] += 1
            cells += 1
    assert len(tables) == 5 and all(len(set(rows)) == 1 and len(rows) >= 2 for rows in tables)
    assert cells > 40


def test_github_annotations_at_the_kernel_line(
    gate: Gate, replay: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = gate(BASE_SUITE + PRODUCT + HANG)
    assert result.exit_code == 3
    lines = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("::error file=kernels/uninit_read.cu,line=6,title=cuprobe initcheck%3A ")
    assert "Uninitialized __global__ memory read" in lines[0]
    assert lines[1].startswith("::error title=cuprobe gate%3A hangs could not run (timeout)::wall-clock limit")


def test_junit_holds_a_tests_output_with_characters_xml_cannot(
    tmp_path: Path, replay_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing test's coloured stderr (ESC, BEL, a control byte) reaches its finding's message; XML 1.0 cannot hold
    those characters, so they are written escaped (\\x1b), not a traceback that leaves no report at all."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(VERSIONS[1], "memcheck_ok")))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1")
    argv = ["sh", "-c", "printf '\\033[31mFAIL\\007 \\001 bad\\n' >&2; exit 1"]
    suite = expand(Suite.model_validate({"name": "ctrl", "test": [
        {"name": "x", "kind": "command", "tool": "memcheck", "argv": argv}]}))
    report = judge(suite, run_local(suite, tmp_path / "work", replay_settings), None)
    junit.write(report, tmp_path / "j.xml")
    results = [r for s in JUnitXml.fromfile(str(tmp_path / "j.xml")) for c in s for r in c.result]
    text = " ".join(r.text or "" for r in results if isinstance(r, Failure))
    assert "\\x1b[31mFAIL\\x07 \\x01 bad" in text, text
