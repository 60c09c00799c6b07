"""A kernel filter that selects no launch is not a clean run: compute-sanitizer 2026.4's launch dump says so.

Every input is a capture of tests/gpu/programs/harness.cu's `uninit 1024 1000` (one `double_all` launch) made on an
H100 (tests/data/captures/README.md, `launches_*`). The replay stand-in answers for compute-sanitizer; the command
itself runs for real as its child.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cuprobe.service.cli.main import app
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import REPLAY, VERSIONS, capture, replaying

cli = CliRunner()
NEW, OLD = VERSIONS[1], VERSIONS[0]
assert NEW.startswith("2026.4") and OLD.startswith("2025.3")


@pytest.fixture
def replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_SANITIZER_PATH", str(REPLAY))


def _exec(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: Path, *args: str) -> tuple[int, dict[str, object]]:
    replaying(monkeypatch, case, target=True)  # reports the H200's GPU facts; these captures are an H100's
    result = cli.invoke(app, ["exec", *args, "--cwd", str(tmp_path), "--json", "--", "true"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("split", [True, False], ids=["in-pieces", "one-stream"])
def test_launch_records_are_counted_not_reported(split: bool, tmp_path: Path) -> None:
    """Each launch is a LaunchInfo record: counted (checked or filtered), never a finding nor one of `records`;
    the gzipped copy goes through the one-stream parser, the plain file through the split one."""

    def parsed(case: str) -> object:
        xml = capture(NEW, case) / "run.xml"
        if not split:
            xml = tmp_path / f"{case}.xml.gz"
            xml.write_bytes(gzip.compress((capture(NEW, case) / "run.xml").read_bytes()))
        return parse_xml(xml)

    none = parsed("launches_filter_nomatch")
    assert none.findings == [] and none.records == 0  # type: ignore[attr-defined]
    launches = none.launches  # type: ignore[attr-defined]
    assert (launches.checked, launches.filtered, launches.filtered_kernels) == (0, 1, ["double_all"])
    match = parsed("launches_filter_match")
    assert [(f.kind, f.count) for f in match.findings] == [("uninitialized-global-read", 24)]  # type: ignore[attr-defined]
    assert match.records == 24 and match.launches.checked == 1 and match.launches.filtered == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("caps", [{"max_records": 7}, {"max_bytes": 9000}], ids=["record-cap", "byte-cap"])
def test_both_parse_paths_agree_under_the_caps(caps: dict[str, int], tmp_path: Path) -> None:
    """Launch records never count against the record cap: past it (7 of 24 records kept) the launch is still
    counted; the split and the one-stream parse agree on findings, counts and launches under either cap."""
    xml = capture(NEW, "launches_filter_match") / "run.xml"
    packed = tmp_path / "run.xml.gz"
    packed.write_bytes(gzip.compress(xml.read_bytes()))
    split, stream = parse_xml(xml, workers=1, **caps), parse_xml(packed, workers=1, **caps)
    assert [f.model_dump() for f in split.findings] == [f.model_dump() for f in stream.findings]
    assert (split.records, split.kept, split.truncated) == (stream.records, stream.kept, stream.truncated)
    assert split.launches == stream.launches and split.truncated
    if "max_records" in caps:
        assert split.kept == 7 and split.records == 24 and split.launches.checked == 1


def test_a_filter_that_selects_no_launch_could_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    """Positive control first: without the dump the same filter reads clean (the case the dump exists for). With it,
    the run is sanitizer_error (exit 3), naming the filter and the kernel it left out."""
    code, blind = _exec(
        monkeypatch, tmp_path, capture(NEW, "launches_filter_nomatch_nodump"), "-t", "initcheck",
        "-S", "kernel-name=kns=no_such_kernel",
    )  # fmt: skip
    assert "--dump-kernel-launches" in blind["command"]  # asked for; this capture was made without it
    assert code == 3 and blind["outcome"] == "sanitizer_error"
    assert "compute-sanitizer reported no kernel launch of the program" in str(blind["message"])
    code, data = _exec(
        monkeypatch, tmp_path, capture(NEW, "launches_filter_nomatch"), "-t", "initcheck",
        "-S", "kernel-name=kns=no_such_kernel",
    )  # fmt: skip
    assert code == 3 and data["outcome"] == "sanitizer_error", data["message"]
    assert data["message"] == (
        "nothing was checked: --kernel-name kns=no_such_kernel selected none of the program's 1 kernel launch(es) "
        "(kernels: double_all); compute-sanitizer's launch dump marks every one filtered"
    )
    assert data["findings"] == [] and data["exit_code"] == 86  # the process's own status, kept as it was


def test_a_filter_that_selects_a_launch_keeps_its_findings_and_says_what_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    code, data = _exec(
        monkeypatch, tmp_path, capture(NEW, "launches_filter_match"), "-t", "initcheck",
        "-S", "kernel-name=kns=double_all",
    )  # fmt: skip
    assert code == 1 and data["outcome"] == "findings", data["message"]
    findings = data["findings"]
    assert isinstance(findings, list) and [(f["kind"], f["count"]) for f in findings] == [
        ("uninitialized-global-read", 24)
    ]
    assert data["records"] == 24 and data["summary_count"] == 24  # the summary's 25 less the launch record
    code, clean = _exec(
        monkeypatch, tmp_path, capture(NEW, "launches_memcheck_filter_match"), "-t", "memcheck",
        "-S", "kernel-name=kns=double_all",
    )  # fmt: skip
    assert code == 0 and clean["outcome"] == "clean", clean["message"]  # the capture exited 86 for the launch alone
    assert (
        "1 of 1 kernel launch(es) checked: --kernel-name kns=double_all selected double_all (compute-sanitizer's "
        "launch dump)"
    ) in str(clean["message"])
    code, counted = _exec(
        monkeypatch, tmp_path, capture(NEW, "launches_memcheck_filter_match"), "-t", "memcheck",
        "-S", "kernel-name=kns=double_all", "-S", "c=5",
    )  # fmt: skip
    assert code == 0 and str(counted["message"]).endswith(
        "1 of 1 kernel launch(es) checked: --kernel-name kns=double_all selected double_all (compute-sanitizer's "
        "launch dump); only the launches that --launch-count 5 selects were checked: compute-sanitizer does not say "
        "whether any launch was, so a filter that selects none reads clean too"
    )  # the dump says nothing of which launches a count leaves out


def test_no_dump_without_a_filter_nor_where_the_sanitizer_lacks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    code, plain = _exec(monkeypatch, tmp_path, capture(NEW, "memcheck_ok"), "-t", "memcheck")
    assert code == 0 and "--dump-kernel-launches" not in plain["command"]
    code, old = _exec(
        monkeypatch, tmp_path, capture(OLD, "memcheck_ok"), "-t", "memcheck", "-S", "kernel-name=kns=no_such_kernel"
    )
    assert code == 0 and old["outcome"] == "clean" and "--dump-kernel-launches" not in old["command"]
    assert (
        "only the launches that --kernel-name kns=no_such_kernel selects were checked: compute-sanitizer does not say "
        "whether any launch was, so a filter that selects none reads clean too (compute-sanitizer 2026.4 and later "
        "says so for kernel and NVTX filters, in the launch dump cuprobe asks for there)"
    ) in str(old["message"])


def _parse(case: Path) -> Result:
    args = ["parse", str(case / "run.xml"), "--log", str(case / "stdout.txt"), "-t", "initcheck", "--json"]
    return cli.invoke(app, args)


def test_a_saved_dump_with_every_launch_filtered_is_not_clean() -> None:
    """`cuprobe parse` of a run someone made with the dump: the launch record is not a finding nor an error the
    XML lacks, and a dump whose every launch is filtered reads could-not-run; the matching run keeps its finding."""
    result = _parse(capture(NEW, "launches_filter_nomatch"))
    data = json.loads(result.stdout)
    assert result.exit_code == 3 and data["outcome"] == "sanitizer_error" and data["findings"] == []
    assert "nothing was checked: its kernel or NVTX filters selected none" in data["message"]
    result = _parse(capture(NEW, "launches_filter_match"))
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and data["outcome"] == "findings" and len(data["findings"]) == 1
