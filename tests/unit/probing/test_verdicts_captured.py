"""The confirmation decided from a real H200 run: uninit-read under initcheck and its four recorded bare re-runs
(tests/data/runs/confirm-verdicts-uninit_read-2026.4.0.0, `cuprobe run uninit-read --tool initcheck` on the H200)."""

from __future__ import annotations

import gzip
from pathlib import Path

from cuprobe.contract import ProbeResult, Tool, is_confirm_control
from cuprobe.probes.confirm_control import CASES as CONTROL_CASES
from cuprobe.service.models import Confirmation
from cuprobe.service.probing.confirm.decide import POISON_RUNS, decide, load_bare_run
from cuprobe.service.probing.runner import allocations_of
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import RUNS

RUN = RUNS / "confirm-verdicts-uninit_read-2026.4.0.0"


def test_uninit_read_is_consequential_and_every_planted_control_gets_its_verdict(tmp_path: Path) -> None:
    xml = tmp_path / "run.xml"
    xml.write_bytes(gzip.decompress((RUN / "run.xml.gz").read_bytes()))
    probe = ProbeResult.model_validate_json((RUN / "result.json").read_text())
    parsed = parse_xml(
        xml, tool=Tool.INITCHECK, roots=["/work/main"], allocations=allocations_of(probe), max_records=10_000
    )
    runs = {}
    for label, mode in POISON_RUNS:
        path = RUN / "confirm" / label.replace("#", "-") / "result.json"
        runs[label] = load_bare_run(label, mode, ProbeResult.model_validate_json(path.read_text()), None, path)
    assert all(run.ok for run in runs.values())

    verdicts = {}
    for finding in parsed.findings:
        verdict, evidence = decide(finding, parsed.flagged.get((finding.signature, finding.case)), runs)
        verdicts.setdefault(finding.case, set()).add(verdict.value)
        if finding.kernel == "double_all":
            assert verdict is Confirmation.CONSEQUENTIAL, evidence.reason
            assert evidence.where and evidence.where.startswith("dst[1000]"), evidence.where
    own = {case: v for case, v in verdicts.items() if not is_confirm_control(case)}
    assert own == {"n=1024,k=1000": {"consequential"}}
    planted = {case: v for case, v in verdicts.items() if is_confirm_control(case)}
    assert planted == {case: {expected} for case, (expected, _) in CONTROL_CASES.items()}
