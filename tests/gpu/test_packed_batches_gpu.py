"""A sweep's batches run exactly their cases on the real binary: batches that run part of their n x variants
product (narrow-matmul's `cases`) find what one process of the whole grid finds, and only the batch that carries
the torch cases imports torch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.sweep as bench
from cuprobe.probes.narrow_matmul import NarrowMatmul, NarrowMatmulParams, expected_uninit_reads
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome
from cuprobe.service.probing.runner import RESULT_NAME, XML_NAME
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import LocalRunner, run_sweep
from cuprobe.service.sweep.plan import plan

pytestmark = pytest.mark.gpu
GRID = bench.GRID.format(name="packed", batch="true", last=16)  # 48 cases, the bench's own grid


def test_packed_batches_find_what_one_process_finds_and_one_imports_torch(settings: Settings, workdir: Path) -> None:
    definition = parse_definition(GRID)
    planned = plan(definition, 4)
    probe = NarrowMatmul()
    carriers = [p for p in planned if probe.uses_torch(NarrowMatmulParams.model_validate(p.params))]
    assert len(planned) == 4 and len(carriers) == 1 and any("cases" in p.params for p in planned)
    one = run_sweep(definition, LocalRunner(workdir / "one", settings, 1))
    four = run_sweep(definition, LocalRunner(workdir / "four", settings, 4))
    assert all(p.control_fired == [True] for p in one.processes + four.processes)
    seen = {c.key: (c.outcome, c.records) for c in four.cases}
    assert seen == {c.key: (c.outcome, c.records) for c in one.cases} and len(seen) == 48
    for key, (outcome, records) in seen.items():  # what the probe's own model says each case makes
        variant, n = key.rsplit("/", 1)[1].split("-n")
        expected = expected_uninit_reads(32, 32, int(n), 32, variant)  # type: ignore[arg-type]
        assert records == expected and outcome is (Outcome.FINDINGS if expected else Outcome.CLEAN), key
    ran_torch, prefetched = [], []
    for xml in (workdir / "four").glob("**/" + XML_NAME):  # each sanitizer process's result
        result = json.loads((xml.parent / RESULT_NAME).read_text())
        ran_torch.append(any(str(c.get("id", "")).startswith("torch-") for c in result.get("cases", [])))
        prefetched.append("torch_prefetch" in result.get("context", {}))
    assert len(ran_torch) == 4 and sum(ran_torch) == 1 and prefetched == ran_torch, (ran_torch, prefetched)
