"""initcheck's host API records, and runs whose kernel filters leave some of a probe's launches unchecked.

Inputs captured on an H100 (tests/data/captures/README.md): `launches_filter_nomatch_hostapi` (2025.3.1.0, the
harness's `uninit 1024 1000` with `--kernel-name kns=no_such_kernel`: 128 InitcheckApiError records at its
cudaMemcpy, because that sanitizer never sees the writes of a kernel its filters leave out), and two `cuprobe run`s
under 2026.4.0.0 made before cuprobe stopped passing `--initcheck-track-filtered-global-memory no` beside a user's
filter: `probe_narrow-matmul_initcheck_kernel_guarded` (`--kernel _guarded_`) and
`probe_uninit-read_initcheck_kernel_nomatch` (`--kernel no_such_kernel`).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.contract import ProbeResult, Tool
from cuprobe.probes.kinds import HOST_API_UNINITIALIZED
from cuprobe.service.cli.main import app
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, Outcome, ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.confirm.policy import HOST_API_REASON, blind_spot_planted, control_options
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import allocations_of, run_probe
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import REPLAY, REPLAY_PYTHON, RUNS, VERSIONS, capture, replaying, xml_bytes

OLD, NEW = VERSIONS
HOSTAPI = capture(OLD, "launches_filter_nomatch_hostapi")
NARROW = capture(NEW, "probe_narrow-matmul_initcheck_kernel_guarded")
UNINIT = capture(NEW, "probe_uninit-read_initcheck_kernel_nomatch")
NARROW_PARAMS = {"m": 32, "k": 32, "tile": 32, "n": [1, 2, 31, 32], "variants": ["guarded", "unguarded", "torch"]}


def _parse(case: Path, split: bool, tmp_path: Path) -> object:
    """The split parser reads a plain file, the one-stream parser a gzipped one."""
    xml = tmp_path / ("run.xml" if split else "run.xml.gz")
    data = xml_bytes(case)
    xml.write_bytes(data if split else gzip.compress(data))
    result = case / "result.json"
    allocations = allocations_of(ProbeResult.model_validate_json(result.read_text())) if result.exists() else []
    return parse_xml(xml, tool=Tool.INITCHECK, roots=["/work/main"], allocations=allocations, workers=1)


@pytest.mark.parametrize("split", [True, False], ids=["in-pieces", "one-stream"])
def test_a_host_copy_of_memory_initcheck_holds_uninitialized_is_an_initcheck_finding(
    split: bool, tmp_path: Path
) -> None:
    """Before, InitcheckApiError was an unknown kind of no tool ('initcheckapierror', tool none), so the confirmer
    never looked at it and no case owned it. Now: an initcheck finding with the sanitizer's own words, told apart by
    the user's call site, and placed in the case whose buffer the copy read (its <errorAddress>, written in decimal)."""
    parsed = _parse(HOSTAPI, split, tmp_path)
    (finding,) = parsed.findings  # type: ignore[attr-defined]
    assert (finding.kind, finding.tool, finding.count) == (HOST_API_UNINITIALIZED, Tool.INITCHECK, 128)
    assert finding.message == "Host API uninitialized memory access"
    assert finding.signature.endswith("|@uninit")  # tests/gpu/programs/harness.cu's uninit() made the copy
    assert finding.addresses[0] == hex(140312328540160)  # the first record's <errorAddress>

    narrow = _parse(NARROW, split, tmp_path)
    counts = {f.case: f.count for f in narrow.findings if f.kind == HOST_API_UNINITIALIZED}  # type: ignore[attr-defined]
    # The output `y` of each unguarded and torch case (their kernels filtered), one record per 32 bytes of it.
    by_n = {1: 4, 2: 8, 31: 124, 32: 128}
    assert counts == {f"{variant}-n{n}": c for variant in ("unguarded", "torch") for n, c in by_n.items()}


def test_both_parse_paths_agree_on_the_host_api_records(tmp_path: Path) -> None:
    split, stream = _parse(NARROW, True, tmp_path), _parse(NARROW, False, tmp_path)
    assert [f.model_dump() for f in split.findings] == [f.model_dump() for f in stream.findings]  # type: ignore[attr-defined]
    assert split.launches == stream.launches  # type: ignore[attr-defined]


def test_the_confirmers_untracking_option_is_never_passed_beside_a_users_filter() -> None:
    """`--initcheck-track-filtered-global-memory no` hid the writes of the user's own filtered kernels too: the
    narrow capture's 528 host API records are the outputs of kernels `--kernel _guarded_` left out, read back by the
    probe. It stays only where no kernel of the user's is filtered; 2025.3 has no such option."""
    assert "--initcheck-track-filtered-global-memory" in NARROW.joinpath("cmd.txt").read_text()
    untrack = ["--initcheck-track-filtered-global-memory", "no"]
    assert control_options(NEW, [], filtered=False)[-2:] == untrack
    assert untrack[0] not in control_options(NEW, ["_guarded_"], filtered=True)
    assert control_options(NEW, ["_guarded_"], filtered=True) == [
        "--kernel-name-exclude=kns=cuprobe_hidden_write", "--kernel-name=kns=cuprobe_control_",
    ]  # fmt: skip
    assert untrack[0] not in control_options(OLD, [], filtered=False)
    assert blind_spot_planted(OLD, True) and blind_spot_planted(NEW, False) and not blind_spot_planted(NEW, True)


@pytest.fixture
def replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))


def test_a_positive_control_the_filter_left_unchecked_blames_the_filter_not_the_instrument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings, replayed: None
) -> None:
    """`narrow-matmul --kernel _guarded_`: the unguarded cases' controls cannot fire (their kernel is filtered).
    Still sanitizer_error, but saying why; the guarded cases' clean verdicts say what was left unchecked, and the
    torch cases, whose launches were all filtered, do not read "clean as expected"."""
    replaying(monkeypatch, NARROW, target=False)
    request = ProbeRequest(
        probe="narrow-matmul", tool=Tool.INITCHECK, params=NARROW_PARAMS, kernel_filter=["_guarded_"], confirm=False
    )
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)

    assert result.outcome is Outcome.SANITIZER_ERROR
    assert "the instrument is broken" not in result.message
    assert result.message.startswith("case unguarded-n1: positive control came back clean")
    assert "the filters left 11 of 15 kernel launch(es) unchecked (kernels: narrow_matmul_unguarded_f32" in (
        result.message
    )
    assert "a positive control whose kernels are among them cannot fire" in result.message
    verdicts = {v.id: v for v in result.cases}
    assert verdicts["guarded-n1"].passed and "of the launches checked: the filters left 11 of 15" in (
        verdicts["guarded-n1"].reason
    )
    assert not verdicts["torch-n1"].passed and verdicts["torch-n1"].reason.startswith("1 finding(s)")
    hostapi = [f for f in result.findings if f.kind == HOST_API_UNINITIALIZED]
    assert {f.case for f in hostapi} == {f"{v}-n{n}" for v in ("unguarded", "torch") for n in (1, 2, 31, 32)}


def test_a_filter_that_selected_none_of_the_probes_launches_says_nothing_was_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings, replayed: None
) -> None:
    """`uninit-read --kernel no_such_kernel`: before, "the instrument is broken"; the confirmer's control launches
    (checked on purpose) are not the probe's."""
    replaying(monkeypatch, UNINIT, target=False)
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, kernel_filter=["no_such_kernel"], confirm=False)
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)

    assert result.outcome is Outcome.SANITIZER_ERROR
    assert result.message.endswith(
        " — nothing was checked: --kernel-name kns=no_such_kernel selected none of the program's 1 kernel launch(es) "
        "(kernels: double_all); compute-sanitizer's launch dump marks every one filtered, so no positive control "
        "could fire"
    )
    assert "the instrument is broken" not in result.message


def test_host_api_findings_are_left_unconfirmed_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    """`cuprobe exec` of the 2025.3 capture: a finding (exit 1), flagged `filtered`, unconfirmed with the reason. The
    bare re-runs snapshot a case's memory before its reading kernel, not before the host's copy, so they could not
    decide a host API read even where they can poison (before, these findings had no tool and were never looked at)."""
    monkeypatch.setenv("CUPROBE_SANITIZER_PATH", str(REPLAY))
    replaying(monkeypatch, HOSTAPI, target=True)
    args = ["exec", "-t", "initcheck", "-S", "kernel-name=kns=no_such_kernel", "--cwd", str(tmp_path), "--json"]
    result = CliRunner().invoke(app, [*args, "--", "true"])

    assert result.exit_code == 1, result.output
    (finding,) = json.loads(result.stdout)["findings"]
    assert (finding["kind"], finding["tool"], finding["count"], finding["filtered"]) == (
        HOST_API_UNINITIALIZED, "initcheck", 128, True,
    )  # fmt: skip
    assert finding["confirmation"] == "unconfirmed"
    assert finding["confirmation_evidence"]["reason"] == HOST_API_REASON


FILTERED_RUN = RUNS / "confirm-filtered-uninit_read-2026.4.0.0"


@pytest.mark.parametrize(
    ("run", "control_ok"), [(FILTERED_RUN, True), (RUNS / "confirm-verdicts-uninit_read-2026.4.0.0", False)]
)
def test_beside_a_users_filter_the_blind_spot_control_must_come_out_seen(
    run: Path, control_ok: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings,
    replayed: None,
) -> None:
    """`cuprobe run uninit-read --kernel double_all` on the H100 after the change (FILTERED_RUN, with its four
    re-runs): no untracking option, the hidden write seen, so the blind-spot control has no finding and passes, and
    the finding is consequential. Replayed against a run made with the untracking option (its blind-spot control has
    findings), the same check fails the run: the control is checked, not assumed."""
    case = tmp_path / "case"
    shutil.copytree(run, case)
    for name in ("version.txt", "help.txt"):
        shutil.copy(FILTERED_RUN / name, case / name)
    if not (case / "stdout.txt").exists():  # that run kept no console: its summary line, from its recorded count
        (case / "stdout.txt").write_text("========= ERROR SUMMARY: 408 errors\n")
    replaying(monkeypatch, case, target=False)
    monkeypatch.setenv("CUPROBE_REPLAY_BARE", str(run))
    settings = replay_settings.model_copy(update={"python": str(REPLAY_PYTHON)})
    params = {"n": 1024, "k": 1000, "block": 256}
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, params=params, kernel_filter=["double_all"])
    result = run_probe(request, workdir=tmp_path / "run", settings=settings)

    assert "--initcheck-track-filtered-global-memory" not in result.command
    blind = next(c for c in result.confirmation_control if c["case"].endswith("blind-spot"))
    assert blind["expected"] == "no finding" and blind["ok"] is control_ok
    if control_ok:
        assert result.outcome is Outcome.FINDINGS and all(c["ok"] for c in result.confirmation_control)
        (finding,) = result.findings
        assert finding.confirmation is Confirmation.CONSEQUENTIAL and finding.count == 24
    else:
        assert blind["got"] == ["blind-spot"]
        assert result.outcome is Outcome.SANITIZER_ERROR
        assert result.message.startswith("the confirmer's control came out wrong")
