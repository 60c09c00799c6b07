"""determinism: real CPU replays in fresh processes, the bitwise comparison, and the cache verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from cuprobe.contract import CaseResult
from cuprobe.probes.determinism import Determinism, DeterminismParams, compare
from tests.unit.probes.conftest import ProbeRun


def test_cpu_ops_replayed_in_fresh_processes(run_probe: ProbeRun) -> None:
    params = {"device": "cpu", "processes": 2, "size": 64, "ops": ["matmul", "index_add", "unseeded"]}
    code, result, _ = run_probe("determinism", params)
    assert code == 0 and result["complete"]
    cases = {c["id"]: c for c in result["cases"]}
    for op in ("matmul", "index_add"):
        obs = cases[op]["observations"]
        assert (obs["distinct_digests"], obs["differing_fraction"], obs["max_abs_diff"]) == (1, 0.0, 0.0)
        assert cases[op]["violations"] == []
    assert "deterministic" in cases["index_add"]["observations"]["note"]
    control = cases["unseeded"]["observations"]
    assert control["distinct_digests"] == 2 and control["varied"] and cases["unseeded"]["violations"] == []


def test_refuses_to_run_under_a_sanitizer(run_probe: ProbeRun) -> None:
    code, result, stderr = run_probe("determinism", {"device": "cpu"}, "racecheck")
    assert code == 2
    assert "bare only" in result["error"] and "racecheck" in stderr
    assert result["cases"] == [] and not result["complete"]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"device": "cpu", "ops": ["triton-splitk"]}, "triton-splitk"),
        ({"processes": 1}, "processes"),
        ({"autotune_cache": "disk"}, "autotune_cache"),
        ({"ops": ["sort"]}, "ops"),
    ],
)
def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun, params: dict[str, object], field: str) -> None:
    code, result, _ = run_probe("determinism", params)
    assert code == 2 and field in result["error"]


def test_cuda_without_a_device_is_unavailable(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("determinism", {"device": "cuda", "processes": 2})
    assert code == 69 and "no CUDA device" in result["unavailable"]


def test_compare_counts_bitwise_differences_and_the_largest_gap() -> None:
    first = np.array([1.0, 2.0, 0.0, 4.0], dtype=np.float32)
    other = np.array([1.0, 2.5, -0.0, 4.0], dtype=np.float32)  # -0.0: different bits, no numeric gap
    assert compare([first, first.copy(), other]) == {"differing_fraction": 0.5, "max_abs_diff": 0.5}
    assert compare([first, first[:2]]) == {"differing_fraction": 1.0, "max_abs_diff": None}


def _report(digest: str, config: str, benchmarked: bool) -> dict[str, object]:
    return {"digest": digest, "choice": {"config": config, "benchmarked": benchmarked}}


def test_autotuner_picking_differently_per_process_is_a_finding_naming_configs() -> None:
    params = DeterminismParams(ops=["triton-splitk"], processes=2)
    case = CaseResult(id="triton-splitk")
    outs = [np.zeros(4, np.float32), np.full(4, 1e-6, np.float32)]
    reports = [_report("a", "SPLIT_K: 1", True), _report("b", "SPLIT_K: 4", True)]
    Determinism._judge(params, "triton-splitk", case, outs, reports, [[], []])
    assert case.violations == [
        "triton-splitk gave 2 distinct outputs in 2 processes (max |diff| 9.999999974752427e-07); "
        "configs picked: SPLIT_K: 1, SPLIT_K: 4"
    ]


@pytest.mark.parametrize(
    "files, later_benchmarked, later_config, violation",
    [
        ([[], []], True, "A", "never materialised"),
        ([["c/k.autotune.json"], ["c/k.autotune.json"]], True, "A", "only 0 of 1 later processes reused it"),
        ([["c/k.autotune.json"], ["c/k.autotune.json"]], False, "A", None),
    ],
)
def test_shared_cache_must_materialise_and_be_reused(
    files: list[list[str]], later_benchmarked: bool, later_config: str, violation: str | None
) -> None:
    params = DeterminismParams(ops=["triton-splitk"], processes=2, autotune_cache="shared")
    case = CaseResult(id="triton-splitk")
    same = [np.zeros(4, np.float32)] * 2
    reports = [_report("a", "A", True), _report("a", later_config, later_benchmarked)]
    Determinism._judge(params, "triton-splitk", case, same, reports, files)
    if violation is None:
        assert case.violations == []
        assert case.observations["cache"]["later_reused"] == 1
    else:
        assert len(case.violations) == 1 and violation in case.violations[0]
