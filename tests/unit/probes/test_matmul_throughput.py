"""matmul-throughput: the verdict on timings, refusal under a sanitizer, unavailable without a GPU."""

from __future__ import annotations

import pytest

from cuprobe.probes.throughput_verdict import Measurement, ceiling, violations
from tests.unit.probes.conftest import ProbeRun

SMALL, LARGE, CEIL = (5120, 768, 2048), (5120, 2048, 8192), (8192, 8192, 8192)


def at(dtype: str, shape: tuple[int, int, int], tflops: float) -> Measurement:
    """A measurement whose median time gives `tflops` at `shape` (hand-made timings, not from a GPU)."""
    m, n, k = shape
    return Measurement(dtype=dtype, shape=shape, median_s=2.0 * m * n * k / (tflops * 1e12))


HEALTHY = [
    at("bf16", CEIL, 700.0),
    at("fp32", SMALL, 50.0),
    at("tf32", SMALL, 300.0),
    at("fp16", SMALL, 400.0),
    at("bf16", SMALL, 420.0),
    at("fp32", LARGE, 55.0),
    at("bf16", LARGE, 650.0),
]


def test_tflops_from_median_seconds() -> None:
    assert Measurement(dtype="bf16", shape=(1000, 1000, 1000), median_s=2e-3).tflops == pytest.approx(1.0)


def test_healthy_run_has_no_findings_and_fp32_tf32_are_never_judged() -> None:
    assert ceiling(HEALTHY) == pytest.approx(700.0)
    assert all(violations(x, HEALTHY, 0.5) == [] for x in HEALTHY)
    slow_fp32 = at("fp32", SMALL, 1.0)
    assert violations(slow_fp32, [*HEALTHY, slow_fp32], 0.5) == []


def test_bf16_slower_than_fp32_at_the_same_shape_is_a_finding() -> None:
    slow = at("bf16", LARGE, 40.0)
    run = [x for x in HEALTHY if not (x.dtype == "bf16" and x.shape == LARGE)] + [slow]
    found = violations(slow, run, 0.5)
    assert found[0] == "bf16 runs slower than fp32 at (5120, 2048, 8192): 40.0 < 55.0 TFLOP/s"
    assert "under 0.5 of the measured bf16 ceiling 700.0" in found[1]


def test_fp16_under_the_fraction_of_the_ceiling_is_a_finding_and_the_fraction_is_configurable() -> None:
    fp16 = at("fp16", SMALL, 400.0)
    assert violations(fp16, HEALTHY, 0.5) == []
    assert violations(fp16, HEALTHY, 0.6) == [
        "fp16 at (5120, 768, 2048) reaches 400.0 TFLOP/s, "
        "under 0.6 of the measured bf16 ceiling 700.0 TFLOP/s"
    ]


def test_refuses_under_a_sanitizer(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("matmul-throughput", {}, "memcheck")
    assert code == 2 and "bare only" in result["error"]


def test_unavailable_without_a_gpu(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("matmul-throughput", {"dtypes": ["bf16"]})
    assert code == 69 and "CUDA" in result["unavailable"]


@pytest.mark.parametrize(
    "params, field",
    [({"dtypes": ["fp8"]}, "dtypes"), ({"shapes": [[1, 2]]}, "shapes"), ({"fraction": 2}, "fraction")],
)
def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun, params: dict[str, object], field: str) -> None:
    code, result, _ = run_probe("matmul-throughput", params)
    assert code == 2 and field in result["error"]
