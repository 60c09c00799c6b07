"""Turning replay's per-process reports into a case's observations and findings."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cuprobe.contract import CaseResult, ObservedFinding
from cuprobe.probes.replay.compare import (
    Divergence,
    autotune_cache_problem,
    autotune_diff,
    describe_record,
    first_divergence,
    first_over,
    growth,
    growth_rows,
    key,
)
from cuprobe.probes.replay.digest import BITS

Report = dict[str, Any]


def tensor_diff(reference: Any, other: Any) -> dict[str, Any]:
    """Elements that differ (bitwise), max |diff| and max relative diff of two full tensors."""
    import torch

    if reference.shape != other.shape or reference.dtype != other.dtype:
        return {"elements": reference.numel(), "differing": None, "max_abs_diff": None, "max_rel_diff": None}
    a, b = reference.reshape(-1), other.reshape(-1)
    if a.is_floating_point():
        bits = BITS[a.element_size()]
        same_bits = a.view(bits) == b.view(bits)  # -0.0 vs 0.0 and NaN payloads count as different
    else:
        same_bits = a == b
    a64, b64 = a.double(), b.double()
    gap = (a64 - b64).abs()
    rel = gap / torch.maximum(a64.abs(), b64.abs()).clamp_min(1e-30)
    return {
        "elements": a.numel(),
        "differing": int((~same_bits).sum()),
        "max_abs_diff": float(gap.max()) if a.numel() else 0.0,
        "max_rel_diff": float(rel[~same_bits].max()) if bool((~same_bits).any()) else 0.0,
    }


def judge_divergence(case: CaseResult, reports: list[Report], output_grads: str) -> list[Divergence | None]:
    """Compare every process with the first: growth table per comparison, one finding per first-divergence place.
    `output_grads`: how the run took module outputs' gradients; without them, a divergence first seen in backward
    says how to find where in backward it began."""
    ref = reports[0]["records"]
    firsts = [first_divergence(ref, r["records"]) for r in reports[1:]]
    comparisons = len(firsts)
    case.observations["comparisons"] = [
        {
            "process": i + 1,
            "first_divergence": None if d is None else {"index": d.index, "kind": d.kind, "tensor": d.at},
            "growth": growth_rows(growth(ref, r["records"])),
        }
        for i, (d, r) in enumerate(zip(firsts, reports[1:], strict=True))
    ]
    groups = agreeing(reports)
    case.observations["agreeing_processes"] = groups
    case.observations["hosts"] = [r.get("host") for r in reports]
    by_signature = Counter(d.signature() for d in firsts if d is not None)
    for signature, k in by_signature.items():
        first = next(d for d in firsts if d is not None and d.signature() == signature)
        parted = [i + 1 for i, d in enumerate(firsts) if d is not None and d.signature() == signature]
        what = "has different bits" if first.kind == "value" else "is where the processes' tensor sequences part"
        if first.at.get("late"):
            what += " (digested at the end of its batch: the program changed it in place after it was recorded)"
        if first.at.get("phase") == "backward" and output_grads == "none":
            what += (
                " (module outputs' gradients were not recorded, so backward is seen through parameter gradients "
                'only: run again with output_grads "retain" to name the module where it began)'
            )
        case.findings.append(
            ObservedFinding(
                signature=signature,
                kind="replay-divergence" if first.kind == "value" else "replay-structure",
                message=(
                    f"first diverging tensor: {describe_record(first.at)} {what} "
                    f"in {k} of {comparisons} comparison(s) with process 0{odd_one(groups)}"
                    f"{host_difference(reports, parted)}"
                ),
                seen=f"{k}/{comparisons}",
                evidence="reproduced",
                details={"index": first.index, "kind": first.kind, "tensor": first.at},
            )
        )
    return firsts


def agreeing(reports: list[Report]) -> list[list[int]]:
    """The processes grouped by identical records (same tensors, same bits), each group in process order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, report in enumerate(reports):
        groups.setdefault(tuple((key(r), r["digest"]) for r in report["records"]), []).append(i)
    return list(groups.values())


def odd_one(groups: list[list[int]]) -> str:
    """Where process 0 is alone against processes that all agree, it is the one that differs: say so, since
    "every comparison with process 0" reads as if every other process diverged."""
    if len(groups) != 2 or groups[0] != [0] or len(groups[1]) < 2:
        return ""
    others = groups[1]
    return (
        f" (processes {', '.join(map(str, others))} agree with one another: process 0 is the one that differs, "
        f"1 of {len(others) + 1} processes)"
    )


def host_difference(reports: list[Report], parted: list[int]) -> str:
    """The settings that decide a CPU result's bits (replay.child.host_settings) where they differ between process 0
    and a process that parted from it: a cause outside the program."""
    reference = reports[0].get("host") or {}
    differing: dict[str, list[str]] = {}
    for i in parted:
        other = reports[i].get("host") or {}
        for name in sorted(set(reference) & set(other)):
            if reference[name] != other[name]:
                differing.setdefault(name, [f"{reference[name]} in process 0"]).append(f"{other[name]} in process {i}")
    if not differing:
        return ""
    said = "; ".join(f"{name} {', '.join(values)}" for name, values in differing.items())
    return (
        f"; the processes did not run with the same settings ({said}): a different thread count or SIMD level "
        "changes the order of floating-point sums, so fix them (e.g. OMP_NUM_THREADS, torch.set_num_threads) "
        "before reading this as the program's nondeterminism"
    )


def judge_magnitude(case: CaseResult, reports: list[Report], threshold: float | None) -> None:
    """The magnitude watch: the first tensor past the threshold (or non-finite) in each process."""
    overs = [first_over(r["records"], threshold) for r in reports]
    nonfinite = [first_over(r["records"], None) for r in reports]
    case.observations["magnitude"] = {
        "threshold": threshold,
        "first_over": overs,
        "first_nonfinite": nonfinite,
    }
    seen = Counter(f"replay-magnitude|{o['module']}|{o['role']}|{o['phase']}" for o in overs if o is not None)
    for signature, k in seen.items():
        first = next(
            o for o in overs if o is not None
            and f"replay-magnitude|{o['module']}|{o['role']}|{o['phase']}" == signature
        )
        later = next((n for n in nonfinite if n is not None), None)
        after = (
            f"; the first non-finite tensor came later: {describe_record(later)}"
            if later is not None and later["index"] > first["index"]
            else ""
        )
        case.findings.append(
            ObservedFinding(
                signature=signature,
                kind="replay-magnitude",
                message=(
                    f"magnitude watch: {describe_record(first)} reached max |x| {first['magnitude']:.4g} "
                    f"(threshold {threshold:g}) in {k} of {len(reports)} process(es){after}"
                    if threshold is not None
                    else f"{describe_record(first)} turned non-finite in {k} of {len(reports)} process(es)"
                ),
                seen=f"{k}/{len(reports)}",
                evidence="proven" if k == len(reports) else "reproduced",
                details={"tensor": first},
            )
        )


def base_kernel(name: str) -> str:
    """`_splitk_kernel#2` (a second autotuner of one kernel in a process) -> `_splitk_kernel`."""
    return name.partition("#")[0]


def judge_autotune(case: CaseResult, reports: list[Report], persistent_env: bool, cache_dir: Path) -> None:
    """A1: configs chosen per process for the same kernel and key; A2: a persistent cache left empty."""
    tuners = [r["autotune"] for r in reports]
    differ = autotune_diff(tuners)
    files = sorted(str(p.relative_to(cache_dir)) for p in cache_dir.glob("**/*.autotune.json")) if (
        cache_dir.is_dir()
    ) else []
    case.observations["autotune"] = {"processes": tuners, "differ": differ, "cache_files": files}
    for kernel in sorted({base_kernel(d["kernel"]) for d in differ}):
        rows = [d for d in differ if base_kernel(d["kernel"]) == kernel]
        case.findings.append(
            ObservedFinding(
                signature=f"replay-autotune|{kernel}",
                kind="replay-autotune",
                message=(
                    f"Triton autotuner chose different configs per process for {kernel} at {len(rows)} key(s); "
                    f"first: key {rows[0]['key']}: " + " / ".join(str(c) for c in rows[0]["configs"])
                ),
                details={"keys": rows},
            )
        )
    problem = autotune_cache_problem(tuners[0], persistent_env, files)
    if problem is not None:
        case.findings.append(
            ObservedFinding(signature="replay-autotune-cache|empty", kind="replay-autotune-cache", message=problem)
        )


def judge_unwritable_cache(case: CaseResult, cache_dir: Path, reason: str, program_error: str | None) -> None:
    """A2: persistent autotuning was asked for, but its cache directory cannot be written."""
    message = (
        f"the persistent Triton autotune cache cannot be written: TRITON_CACHE_DIR {cache_dir} ({reason}); no "
        "autotune result can be kept (every process re-benchmarks, and may pick a different config), and Triton "
        "cannot keep compiled kernels there either"
    )
    if program_error is not None:
        case.observations["program_error"] = program_error
        message += f"; the program then failed: {program_error.splitlines()[0][:300]}"
    case.observations["autotune_cache_unwritable"] = {"directory": str(cache_dir), "reason": reason}
    case.findings = [f for f in case.findings if f.signature != "replay-autotune-cache|empty"]  # the cause, named
    case.findings.append(
        ObservedFinding(
            signature="replay-autotune-cache|unwritable",
            kind="replay-autotune-cache",
            message=message,
            details={"directory": str(cache_dir), "reason": reason},
        )
    )


def judge_digest_paths(case: CaseResult, reports: list[Report]) -> None:
    """Which way each process digested its GPU tensors (docs/replay.md): the batches per path, and why the Triton
    kernel was given up where it was. Both paths compute the same digests, so this is a note, never a finding."""
    case.observations["digest_paths"] = [r.get("digest_paths") or {} for r in reports]
    failed = [(i, r["triton_failed"]) for i, r in enumerate(reports) if r.get("triton_failed")]
    if failed:
        i, why = failed[0]
        case.observations["digest_note"] = (
            f"the Triton digest kernel failed in process {i} ({why}); from then on its batches took the staging "
            "path (the same digests, more host time)"
            + (f"; also in {len(failed) - 1} other process(es)" if len(failed) > 1 else "")
        )
