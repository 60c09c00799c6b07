"""gradcheck: the noise-floor verdict on recorded gaps, and the probe for real on CPU."""

from __future__ import annotations

import pytest

from cuprobe.probes.gradcheck import INCONCLUSIVE, overall_verdict, reference_verdict
from tests.unit.probes.conftest import ProbeRun


# (gap, noise) recorded on CPU, float32 linear layer: h=1e-3 (sound), h=1e-6 (at its noise floor),
# and the planted transpose bug at h=1e-3.
@pytest.mark.parametrize(
    "gap, noise, verdict",
    [
        (2.3074878493317132e-04, 1.9726858877086493e-03, "ok"),
        (0.22353825, 0.6666666666666666, INCONCLUSIVE),
        (1.5415858050110023, 1.9726858877086493e-03, "finding"),
    ],
)
def test_reference_verdict_on_recorded_gaps(gap: float, noise: float, verdict: str) -> None:
    assert reference_verdict(gap, noise, tol=1e-2) == verdict


def test_a_sound_reference_overrules_a_noisy_one() -> None:
    assert overall_verdict([INCONCLUSIVE, "ok"]) == "ok"
    assert overall_verdict([INCONCLUSIVE, "finding"]) == "finding"
    assert overall_verdict([INCONCLUSIVE]) == INCONCLUSIVE


def test_correct_ops_pass_and_the_planted_bug_is_a_finding(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("gradcheck", {})
    assert code == 0 and result["complete"]
    verdicts = {c["id"]: c["observations"]["verdict"] for c in result["cases"]}
    assert verdicts == {"linear": "ok", "attention": "ok", "planted-linear": "finding"}
    assert all(c["violations"] == [] for c in result["cases"])  # the planted finding is expected


def test_float32_reference_at_its_noise_floor_is_inconclusive_not_a_failure(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe(
        "gradcheck", {"ops": ["linear", "planted-linear"], "references": ["dtype"], "h": 1e-5}
    )
    assert code == 0
    linear, planted = result["cases"]
    assert linear["observations"]["verdict"] == INCONCLUSIVE and linear["violations"] == []
    ref = linear["observations"]["reference_dtype"]
    assert ref["noise"] > ref["gap"] > 1e-2
    assert planted["observations"]["verdict"] == "finding"


def test_a_step_too_small_to_see_the_planted_bug_is_a_violation(run_probe: ProbeRun) -> None:
    # In float32 x + 1e-8 == x: both differences are zero and agree; that is no sound reference.
    code, result, _ = run_probe("gradcheck", {"ops": ["planted-linear"], "references": ["dtype"], "h": 1e-8})
    assert code == 0
    assert result["cases"][0]["observations"]["reference_dtype"]["step_resolved"] is False
    assert result["cases"][0]["violations"] == [
        f"planted-linear: the planted gradient bug was not detected (verdict {INCONCLUSIVE})"
    ]


@pytest.mark.parametrize(
    "params, field", [({"ops": ["conv"]}, "ops"), ({"h": 0}, "h"), ({"references": ["bf16"]}, "references")]
)
def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun, params: dict[str, object], field: str) -> None:
    code, result, _ = run_probe("gradcheck", params)
    assert code == 2 and field in result["error"]
