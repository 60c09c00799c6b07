"""bf16-matmul: the classifier on recorded observations, and the probe for real on torch CPU."""

from __future__ import annotations

import pytest

from cuprobe.probes.bf16_classify import Bf16Class, Bf16Observation, classify
from tests.unit.probes.conftest import ProbeRun

# Recorded with this probe on a dev machine (AMD EPYC, 2 threads, torch 2.13.0+cpu, 256x256x256):
# bf16 differed from fp32-then-round in 6.1e-05 of elements, relative error 0.0024.
CPU_RECORDED = {
    "out_dtype": "bfloat16",
    "rel_err": 0.0023998622484173397,
    "k": 256,
    "bit_identical_to_fp32_round": False,
    "differing_fraction": 6.103515625e-05,
}


def test_recorded_cpu_run_is_native_and_proven_when_timed() -> None:
    verdict = classify(Bf16Observation(**CPU_RECORDED, t_bf16_s=7.59e-05, t_fp32_s=2.50e-04))
    assert (verdict.cls, verdict.evidence) == (Bf16Class.NATIVE, "proven")
    assert "measurably faster" in verdict.reasons[1]


def test_different_bits_are_native_even_when_slower() -> None:
    # The same machine's first, cold measurement: bf16 25x slower than fp32, bits still its own.
    verdict = classify(Bf16Observation(**CPU_RECORDED, t_bf16_s=4.79e-03, t_fp32_s=1.93e-04))
    assert verdict.cls is Bf16Class.NATIVE
    assert "no faster" in verdict.reasons[1]


def test_identical_bits_and_no_faster_is_a_silent_upcast() -> None:
    obs = Bf16Observation(
        **{**CPU_RECORDED, "bit_identical_to_fp32_round": True, "differing_fraction": 0.0},
        t_bf16_s=1.00e-3,
        t_fp32_s=0.95e-3,
    )
    assert classify(obs).cls is Bf16Class.SILENT_UPCAST
    assert classify(obs).evidence == "proven"


def test_identical_bits_but_measurably_faster_is_native() -> None:
    obs = Bf16Observation(
        **{**CPU_RECORDED, "bit_identical_to_fp32_round": True}, t_bf16_s=0.5e-3, t_fp32_s=1e-3
    )
    assert classify(obs).cls is Bf16Class.NATIVE


def test_speed_margin_decides_what_measurably_faster_means() -> None:
    obs = Bf16Observation(
        **{**CPU_RECORDED, "bit_identical_to_fp32_round": True}, t_bf16_s=0.85e-3, t_fp32_s=1e-3
    )
    assert classify(obs, speed_margin=0.8).cls is Bf16Class.SILENT_UPCAST
    assert classify(obs, speed_margin=0.9).cls is Bf16Class.NATIVE


@pytest.mark.parametrize("identical, cls", [(True, Bf16Class.SILENT_UPCAST), (False, Bf16Class.NATIVE)])
def test_without_timings_the_verdict_is_bits_only_and_correlated(identical: bool, cls: Bf16Class) -> None:
    verdict = classify(Bf16Observation(**{**CPU_RECORDED, "bit_identical_to_fp32_round": identical}))
    assert (verdict.cls, verdict.evidence) == (cls, "correlated")
    assert "bits only" in verdict.reasons[-1]


def test_dtype_change_nan_huge_error_and_raise() -> None:
    assert (
        classify(Bf16Observation(**{**CPU_RECORDED, "out_dtype": "float32"})).cls is Bf16Class.SILENT_UPCAST
    )
    assert (
        classify(Bf16Observation(**{**CPU_RECORDED, "finite": False, "rel_err": None})).cls
        is Bf16Class.GARBAGE
    )
    assert classify(Bf16Observation(**{**CPU_RECORDED, "rel_err": 0.9})).cls is Bf16Class.GARBAGE
    assert classify(Bf16Observation(error="RuntimeError: no bf16", k=256)).cls is Bf16Class.REFUSED


def test_cpu_backend_and_refusing_pycuda_backend_for_real(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe(
        "bf16-matmul", {"backends": ["torch-cpu", "pycuda"], "m": 64, "k": 64, "n": 64, "timing": False}
    )
    assert code == 0 and result["complete"]
    cpu, pycuda = (c["observations"] for c in result["cases"])
    assert cpu["class"] == ("silent_upcast" if cpu["bit_identical_to_fp32_round"] else "native")
    assert cpu["evidence"] == "correlated" and cpu["out_dtype"] == "bfloat16" and cpu["rel_err"] < 0.01
    assert pycuda["class"] == "refused" and "no bfloat16 matmul kernel" in pycuda["error"]
    assert all(c["violations"] == [] for c in result["cases"])


def test_tripwire_names_both_classes(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe(
        "bf16-matmul",
        {"backends": ["torch-cpu", "pycuda"], "m": 32, "k": 32, "n": 32, "expect": "refused", "repeats": 3},
    )
    assert code == 0
    cpu, pycuda = result["cases"]
    observed = cpu["observations"]["class"]
    assert cpu["violations"] == [
        f"bf16 matmul on torch-cpu: expected refused, observed {observed} "
        f"({'; '.join(cpu['observations']['reasons'])})"
    ]
    assert pycuda["violations"] == []


def test_under_a_sanitizer_speed_is_not_evidence(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe(
        "bf16-matmul", {"backends": ["torch-cpu"], "m": 16, "k": 16, "n": 16}, "memcheck"
    )
    assert code == 0
    obs = result["cases"][0]["observations"]
    assert obs["t_bf16_s"] is None and obs["evidence"] == "correlated"
    assert result["context"]["timing"].startswith("not measured")


@pytest.mark.parametrize(
    "params, field", [({"backends": ["tpu"]}, "backends"), ({"expect": "fast"}, "expect"), ({"k": 0}, "k")]
)
def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun, params: dict[str, object], field: str) -> None:
    code, result, _ = run_probe("bf16-matmul", params)
    assert code == 2 and field in result["error"]


def test_cuda_backend_without_a_gpu_is_unavailable(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("bf16-matmul", {"backends": ["torch-cuda"]})
    assert code == 69 and "CUDA" in result["unavailable"]
