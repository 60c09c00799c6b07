"""narrow-matmul: expected initcheck counts, per-case expectations, numerical verdicts, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.kinds import UNINITIALIZED_GLOBAL_READ
from cuprobe.probes.narrow_matmul import (
    DEFAULT_N,
    NarrowMatmul,
    NarrowMatmulParams,
    Variant,
    expected_uninit_reads,
    operands,
    relative_error,
    tolerance,
)
from tests.unit.probes.conftest import ProbeRun


def simulate_uninit_reads(m: int, k: int, n: int, tile: int, variant: Variant) -> int:
    """Replays kernels/narrow_matmul.cu's weight loads thread by thread; counts loads of rows >= n."""
    if variant == "torch":
        return 0
    n_pad = -(-n // tile) * tile
    count = 0
    for _block_row in range(-(-m // tile)):
        for bx in range(n_pad // tile):
            for ty in range(tile):
                for tx in range(tile):
                    wrow = bx * tile + ty
                    for k0 in range(0, k, tile):
                        kc = k0 + tx
                        loads = kc < k and (variant == "unguarded" or wrow < n)
                        assert not loads or wrow < n_pad, "the kernel would read past the padded buffer"
                        count += loads and wrow >= n
    return count


@pytest.mark.parametrize("m,k,tile", [(32, 32, 32), (64, 64, 32), (5, 40, 16), (33, 7, 8)])
@pytest.mark.parametrize("variant", ["unguarded", "guarded", "torch"])
def test_closed_form_matches_the_kernels_access_pattern(m: int, k: int, tile: int, variant: Variant) -> None:
    for n in [1, 2, 3, 7, 8, 9, 31, 32, 33, 65]:
        assert expected_uninit_reads(m, k, n, tile, variant) == simulate_uninit_reads(m, k, n, tile, variant)


def test_default_sweep_predicts_reads_exactly_off_tile_multiples() -> None:
    counts = {n: expected_uninit_reads(32, 32, n, 32, "unguarded") for n in DEFAULT_N}
    assert counts == {
        1: 992,
        2: 960,
        3: 928,
        4: 896,
        8: 768,
        31: 32,
        32: 0,
        33: 992,
        63: 32,
        64: 0,
        65: 992,
        127: 32,
        128: 0,
    }
    assert all(expected_uninit_reads(32, 32, n, 32, "guarded") == 0 for n in DEFAULT_N)


def test_unguarded_off_multiple_is_the_initcheck_positive_control() -> None:
    probe, params = NarrowMatmul(), NarrowMatmulParams()
    control = probe.case_expectation(params, Tool.INITCHECK, "unguarded", 33)
    assert (control.clean, control.tool, control.kind) == (False, Tool.INITCHECK, UNINITIALIZED_GLOBAL_READ)
    assert probe.case_expectation(params, Tool.INITCHECK, "unguarded", 64).clean
    assert probe.case_expectation(params, Tool.INITCHECK, "guarded", 33).clean
    assert probe.case_expectation(params, Tool.INITCHECK, "torch", 33).clean
    assert probe.case_expectation(params, Tool.MEMCHECK, "unguarded", 33).clean
    assert not probe.expectation(params, Tool.INITCHECK).clean
    assert probe.expectation(NarrowMatmulParams(n=[32, 64]), Tool.INITCHECK).clean


def test_a_wrong_result_is_a_violation_and_a_right_one_is_not() -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 32)), rng.standard_normal((3, 32))
    params = NarrowMatmulParams(m=4, k=32, n=[3])
    right = CaseResult(id="right")
    NarrowMatmul._judge(params, right, (x.astype(np.float32) @ w.astype(np.float32).T), (x, w))
    assert right.violations == [] and right.observations["max_rel_err"] < tolerance("float32", 32)
    leaked = (x @ w.T).astype(np.float32)
    leaked[0, 2] = np.nan  # what an unmasked garbage column would look like
    wrong = CaseResult(id="wrong")
    NarrowMatmul._judge(params, wrong, leaked, (x, w))
    assert wrong.violations and "result wrong" in wrong.violations[0]


def test_relative_error_is_normwise() -> None:
    ref = np.array([[10.0, 0.0]])
    assert relative_error(np.array([[10.0, 1e-3]]), ref) == pytest.approx(1e-4)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"tile": 7}, "tile"),
        ({"variants": ["fast"]}, "variants"),
        ({"n": [0]}, "n"),
        ({"n": [3, 3]}, "n"),
        ({"dtype": "bfloat16"}, "dtype"),
        ({"m": 1, "kk": 2}, "kk"),
        ({"n": [3], "cases": ["unguarded-n4"]}, "cases"),
        ({"n": [3], "cases": ["torch-n3", "torch-n3"]}, "cases"),
        ({"n": [3], "cases": []}, "cases"),
    ],
)
def test_bad_parameter_exits_2_naming_it(run_probe: ProbeRun, params: dict[str, object], field: str) -> None:
    code, result, stderr = run_probe("narrow-matmul", params, "initcheck")
    assert code == 2
    assert field in result["error"] and field in stderr
    assert result["complete"] is False


def test_without_a_gpu_the_kernel_cases_are_unavailable_not_clean(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe("narrow-matmul", {"n": [3], "variants": ["unguarded"]}, "initcheck")
    assert code == 69
    assert result["complete"] is False
    assert "pycuda" in result["unavailable"] or "CUDA device" in result["unavailable"]


def test_torch_backend_without_cuda_is_unavailable_and_sets_no_caching(run_probe: ProbeRun) -> None:
    code, result, _ = run_probe(
        "narrow-matmul",
        {"n": [3], "variants": ["torch"]},
        "initcheck",
        env={"PYTORCH_NO_CUDA_MEMORY_CACHING": ""},
    )
    assert code == 69 and "CUDA device" in result["unavailable"]
    no_caching = {"n": [3], "variants": ["torch"], "allocator": "no-caching"}
    code, result, _ = run_probe("narrow-matmul", no_caching, "initcheck")
    assert result["context"]["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"


def test_narrowed_keeps_the_flagged_cases_and_drops_torch_when_it_can() -> None:
    """The confirmation may re-run only the flagged cases: their n values and variants, a product holding each."""
    probe = NarrowMatmul()
    params = NarrowMatmulParams(n=list(range(1, 17)), variants=["unguarded", "guarded", "torch"])
    cut = probe.narrowed(params, {"unguarded-n5", "unguarded-n9"})
    assert cut is not None and cut.n == [5, 9] and cut.variants == ["unguarded"]
    assert probe.uses_torch(params) and not probe.uses_torch(cut)  # a pycuda-only re-run: no torch import
    assert (cut.m, cut.k, cut.tile, cut.seed, cut.dtype) == (params.m, params.k, params.tile, params.seed, params.dtype)
    both = probe.narrowed(params, {"guarded-n3", "torch-n2"})
    assert both is not None and both.n == [2, 3] and both.variants == ["guarded", "torch"]
    # Not this run's cases, or not a case id at all: it cannot say, so every case is re-run.
    assert probe.narrowed(params, {"unguarded-n99"}) is None
    assert probe.narrowed(params, {"double_all"}) is None
    assert probe.narrowed(params, set()) is None


def test_without_torch_leaves_out_only_the_torch_variant() -> None:
    """The confirmation's early re-runs leave out the cases that import torch: the torch variant, every n kept; the
    probe says it cannot where nothing would be left out or nothing would be left."""
    probe = NarrowMatmul()
    params = NarrowMatmulParams(n=[1, 7, 33], variants=["torch", "unguarded", "guarded"])
    cut = probe.without_torch(params)
    assert cut is not None and cut.n == [1, 7, 33] and cut.variants == ["unguarded", "guarded"]
    assert probe.uses_torch(params) and not probe.uses_torch(cut)
    assert cut.model_dump(exclude={"variants"}) == params.model_dump(exclude={"variants"})
    assert probe.without_torch(cut) is None  # no torch case to leave out
    assert probe.without_torch(NarrowMatmulParams(n=[3], variants=["torch"])) is None  # nothing would be left


def test_batches_of_one_grid_merge_into_one_run_of_every_case() -> None:
    """A sweep's batches share one confirmation: the probe puts their cases back into one set of parameters, and
    says it cannot where the batches differ in more than their cases or the union is more than one run takes."""
    probe = NarrowMatmul()
    a = NarrowMatmulParams(n=[1, 4, 5], variants=["unguarded", "guarded", "torch"])
    b = NarrowMatmulParams(n=[2, 3], variants=["unguarded", "guarded", "torch"])
    c = NarrowMatmulParams(n=[6], variants=["unguarded"])
    merged = probe.merged([a, b, c])
    assert (
        merged is not None and merged.n == [1, 4, 5, 2, 3, 6] and merged.variants == ["unguarded", "guarded", "torch"]
    )
    assert probe.merged([a, a]) == a  # repeats of one batch
    assert probe.merged([a, a.model_copy(update={"tile": 16})]) is None
    assert probe.merged([a, a.model_copy(update={"seed": 1})]) is None
    wide = [NarrowMatmulParams(n=list(range(s, s + 400)), variants=["guarded"]) for s in (1, 401)]
    assert probe.merged(wide) is None  # 800 values of n: past the 512 one run takes
    assert probe.merged([]) is None


def test_a_case_gets_the_same_inputs_in_any_batch() -> None:
    """Case n's operands come from (seed, n) alone, so a case re-run beside other cases (a merged or narrowed
    confirmation) multiplies the same matrices as in its sanitizer run; another seed gives others."""
    alone = NarrowMatmulParams(n=[5])
    among = NarrowMatmulParams(n=[1, 2, 3, 4, 5, 6])
    for x, y in zip(operands(alone, 5), operands(among, 5), strict=True):
        assert np.array_equal(x, y)
    assert not np.array_equal(operands(alone, 5)[1], operands(alone.model_copy(update={"seed": 1}), 5)[1])
    assert operands(alone, 5)[1].shape == (5, 32)


def test_cases_run_only_part_of_the_product_and_the_confirmation_keeps_to_it() -> None:
    """A sweep's batch may run part of its n x variants product (`cases`): the torch variant of some n values in a
    process of its own. Narrowed and torch-free re-runs keep to that part; merged batches give the whole product."""
    probe = NarrowMatmul()
    cases = ["torch-n3", "unguarded-n1", "torch-n2"]
    part = NarrowMatmulParams(n=[1, 2, 3], variants=["unguarded", "torch"], cases=cases)
    assert part.selected() == [("unguarded", 1), ("torch", 2), ("torch", 3)]  # the probe's order, not the list's
    assert probe.uses_torch(part)
    assert not probe.uses_torch(part.model_copy(update={"cases": ["unguarded-n1"]}))
    cut = probe.without_torch(part)
    assert cut is not None and cut.selected() == [("unguarded", 1)] and cut.cases is None  # the whole of its product
    narrow = probe.narrowed(part, {"torch-n2", "unguarded-n1"})
    assert narrow is not None and narrow.selected() == [("unguarded", 1), ("torch", 2)]
    assert narrow.cases == ["unguarded-n1", "torch-n2"]  # not unguarded-n2 or torch-n1, which it never ran
    assert probe.narrowed(part, {"unguarded-n2"}) is None  # in the product, but not a case this batch runs
    other = NarrowMatmulParams(n=[1, 2, 3], variants=["unguarded", "guarded"])
    merged = probe.merged([part, other])
    assert merged is not None and merged.cases is None
    assert set(merged.selected()) >= set(part.selected()) | set(other.selected())
    assert probe.merged([part, other.model_copy(update={"seed": 2})]) is None
