"""tests/gpu/case_table.py on real initcheck output: records are attributed to cases by allocation address."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.gpu.case_table import main
from tests.unit.probes.conftest import ROOT

CAPTURE = ROOT / "tests/data/captures/2025.3.1.0/initcheck_uninit"  # harness uninit 1024 1000: 24 records
SRC = 0x7F4E94800000  # the harness's src buffer: its first unwritten float is at +4000 (0x...0fa0 in the XML)


def case(case_id: str, start: int, expected: int) -> dict[str, object]:
    return {
        "id": case_id,
        "allocations": [{"name": "src", "start": start, "size": 4096}],
        "observations": {"expected_uninit_reads": expected, "max_rel_err": 0.0},
        "violations": [],
    }


@pytest.mark.parametrize("expected_in_src, code", [(24, 0), (23, 1)])
def test_counts_per_case_match_or_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expected_in_src: int, code: int
) -> None:
    shutil.copy(CAPTURE / "run.xml", tmp_path / "run.xml")
    shutil.copy(CAPTURE / "stdout.txt", tmp_path / "stdout.txt")
    cases = [case("uninit", SRC, expected_in_src), case("elsewhere", SRC + (1 << 20), 0)]
    (tmp_path / "result.json").write_text(json.dumps({"complete": True, "cases": cases}))
    assert main(tmp_path) == code
    out = capsys.readouterr().out
    assert "records: 24 in run.xml, 0 in no case's allocations, sanitizer summary: 24" in out
    assert out.splitlines()[2].split()[:4] == ["elsewhere", "0", "0", "yes"]
