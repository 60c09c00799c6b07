"""Deciding a finding's confirmation from bare re-runs with poisoned memory: pure functions, no processes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cuprobe.contract import ProbeResult
from cuprobe.probes.poison import FILL, SENTINEL_BYTE
from cuprobe.service.models import Confirmation, ConfirmationEvidence, Finding, RangeSurvival
from cuprobe.service.sanitizer.flagged import FlaggedMemory, Range

Arrays = dict[str, np.ndarray[Any, Any]]
# The bare re-runs, in order: two with the same poison (is the case deterministic?), one with another poison
# (does the result depend on never-written memory?), one with the sentinel and snapshots (was it written?).
POISON_RUNS: tuple[tuple[str, str], ...] = (("ff#1", "ff"), ("ff#2", "ff"), ("zero", "zero"), ("sentinel", "sentinel"))
MAX_RANGES_SHOWN = 16


@dataclass
class BareRun:
    """One bare re-run with poisoned fresh allocations: whether it completed, and what it kept per case."""

    label: str
    mode: str
    ok: bool
    message: str = ""
    digests: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Arrays] = field(default_factory=dict)
    snapshots: dict[str, dict[str, tuple[str, np.ndarray[Any, Any]]]] = field(default_factory=dict)
    duration_s: float = 0.0
    cases: set[str] = field(default_factory=set)  # the cases it ran (its result's case ids)
    warm: bool = False  # run by a process started before it (service/probing/confirm/warm.py)


def load_bare_run(
    label: str, mode: str, probe: ProbeResult | None, why_not: str | None, result_path: Path, duration_s: float = 0.0
) -> BareRun:
    """A BareRun from the probe's result.json and the arrays beside it; not ok (with the reason) if it failed."""
    if probe is None or not probe.complete:
        reason = why_not or (probe.unavailable or probe.error if probe else None) or "no result"
        return BareRun(label, mode, False, " ".join(str(reason).split())[:400], duration_s=duration_s)
    index = probe.context.get("poison") or {}
    run = BareRun(label, mode, True, duration_s=duration_s, cases={case.id for case in probe.cases})
    arrays: Any = {}
    if index.get("file"):
        arrays = np.load(result_path.with_name(index["file"]))
    for case_id, entry in (index.get("outputs") or {}).items():
        run.digests[case_id] = entry["digest"]
        run.outputs[case_id] = {name: arrays[key] for name, key in entry["arrays"].items()}
    for case_id, snaps in (index.get("snapshots") or {}).items():
        run.snapshots[case_id] = {name: (s["checkpoint"], arrays[s["key"]]) for name, s in snaps.items()}
    return run


def sentinel_survival(buffer: str, raw: np.ndarray[Any, Any], ranges: list[Range], size: int) -> list[RangeSurvival]:
    """For each flagged range: its elements (of the access size) and how many still hold the sentinel in `raw`.

    ValueError when a range lies past the snapshot (the buffer the probe read back is not the one flagged).
    """
    out = []
    size = max(size, 1)
    for start, end in ranges:
        if end > raw.size:
            raise ValueError(f"flagged bytes {start}..{end} of {buffer} lie past its {raw.size}-byte snapshot")
        seg = raw[start:end]
        whole = seg.size // size * size
        surviving = int(np.all(seg[:whole].reshape(-1, size) == SENTINEL_BYTE, axis=1).sum()) if whole else 0
        elements = whole // size
        if whole < seg.size:  # a tail shorter than one access: one more element
            elements += 1
            surviving += int(np.all(seg[whole:] == SENTINEL_BYTE))
        out.append(RangeSurvival(buffer=buffer, start=start, end=end, elements=elements, surviving=surviving))
    return out


def _bits(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a.view(np.uint8)


def _show(array: np.ndarray[Any, Any], at: tuple[Any, ...]) -> str:
    """One element as its value and its bits (NaN payloads differ only there)."""
    value = array[at]
    return f"{value.item()!r} (0x{int(_bits(np.asarray(value).reshape(1))[0]):0{2 * array.dtype.itemsize}x})"


def compare(first: Arrays, second: Arrays, names: tuple[str, str]) -> tuple[float | None, int, str | None]:
    """(max |difference| over elements finite in both, differing elements, the first difference) bit for bit."""
    max_diff: float | None = None
    differing, where = 0, None
    for name in sorted(set(first) | set(second)):
        a, b = first.get(name), second.get(name)
        if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
            differing += max(a.size if a is not None else 0, b.size if b is not None else 0, 1)
            where = where or f"{name}: present or shaped differently under {names[0]} and {names[1]}"
            continue
        mask = _bits(a) != _bits(b)
        if not mask.any():
            continue
        differing += int(mask.sum())
        if where is None:
            at = np.unravel_index(int(np.flatnonzero(mask)[0]), a.shape) if a.shape else ()
            index = ",".join(str(int(i)) for i in at)
            where = f"{name}[{index}]: {_show(a, at)} under {names[0]}, {_show(b, at)} under {names[1]}"
        if np.issubdtype(a.dtype, np.number):
            x, y = a.astype(np.float64), b.astype(np.float64)
            finite = mask & np.isfinite(x) & np.isfinite(y)
            if finite.any():
                biggest = float(np.max(np.abs(x[finite] - y[finite])))
                max_diff = biggest if max_diff is None else max(max_diff, biggest)
    return max_diff, differing, where


def _poison_name(mode: str) -> str:
    fill = FILL[mode]
    return f"0x{fill:02X}" if fill is not None else mode


# A result named `BUFFER -> ...` is what an op reading BUFFER produced (a user's test: probes/test_watch.py); a
# finding is judged on those of its own buffers where the case keeps such results.
READ_FROM = " -> "


def _of_buffers(arrays: Arrays, buffers: set[str]) -> Arrays:
    """The results that the reads of `buffers` produced, where results are named by buffer; else all of them."""
    if not any(READ_FROM in name for name in arrays):
        return arrays
    return {name: a for name, a in arrays.items() if name.partition(READ_FROM)[0] in buffers}


def decide(
    finding: Finding, flagged: FlaggedMemory | None, runs: dict[str, BareRun]
) -> tuple[Confirmation, ConfirmationEvidence]:
    """The confirmation of one initcheck finding, with what was compared (see docs/confirmation.md)."""

    def unconfirmed(
        reason: str, evidence: ConfirmationEvidence | None = None
    ) -> tuple[Confirmation, ConfirmationEvidence]:
        ev = evidence or ConfirmationEvidence(reason=reason)
        ev.reason = reason
        return Confirmation.UNCONFIRMED, ev

    failed = [r for r in runs.values() if not r.ok]
    if failed:
        r = failed[0]
        return unconfirmed(f"the bare re-run {r.label} (poison {_poison_name(r.mode)}) did not complete: {r.message}")
    case = finding.case
    if case is None:
        return unconfirmed("the finding belongs to no case: its reads fall in no buffer the probe recorded")
    if flagged is None or not flagged.records:
        return unconfirmed("the sanitizer gave no address for these reads, so their memory cannot be checked")
    if flagged.unmapped:
        return unconfirmed(
            f"{flagged.unmapped} of {flagged.records} flagged reads fall outside the buffers the probe recorded for "
            f"case {case}, so their memory cannot be checked"
        )
    evidence = ConfirmationEvidence(
        reason="",
        digests={label: run.digests[case] for label, run in runs.items() if case in run.digests},
    )
    sentinel = runs["sentinel"]
    survival: list[RangeSurvival] = []
    for buffer, ranges in sorted(flagged.merged().items()):
        snap = sentinel.snapshots.get(case, {}).get(buffer)
        if snap is None:
            return unconfirmed(
                f"the probe took no snapshot of {buffer} (case {case}) before the reading kernel", evidence
            )
        evidence.checkpoint, raw = snap
        try:
            survival += sentinel_survival(buffer, raw, ranges, flagged.access_size)
        except ValueError as exc:
            return unconfirmed(f"case {case}: {exc}", evidence)
    evidence.flagged_ranges = len(survival)
    evidence.flagged_elements = sum(r.elements for r in survival)
    evidence.surviving_elements = sum(r.surviving for r in survival)
    evidence.ranges = survival[:MAX_RANGES_SHOWN]
    where = f"{evidence.flagged_elements} flagged element(s) in {len(survival)} range(s), {evidence.checkpoint}"
    if evidence.surviving_elements == 0:
        evidence.reason = (
            f"the 0x{SENTINEL_BYTE:02X} sentinel was gone from all {where}: the memory was written by a path "
            "initcheck does not track"
        )
        return Confirmation.BLIND_SPOT, evidence
    results = [runs[label].outputs.get(case) for label in ("ff#1", "ff#2", "zero")]
    if any(r is None for r in results):
        return unconfirmed(f"the probe keeps no result for case {case}, so there is nothing to compare", evidence)
    ff1, ff2, zero = (_of_buffers(r or {}, set(flagged.merged())) for r in results)
    never = f"never written ({evidence.surviving_elements} of {where} still held the sentinel" + (
        "; the rest was written by a path initcheck does not track)"
        if evidence.surviving_elements < evidence.flagged_elements
        else ")"
    )
    if compare(ff1, ff2, ("ff#1", "ff#2"))[1]:
        _, _, evidence.where = compare(ff1, ff2, ("ff#1", "ff#2"))
        return unconfirmed(
            "the case is not deterministic: two runs with the same poison (0xFF) gave different results", evidence
        )
    evidence.max_diff, evidence.differing, evidence.where = compare(ff1, zero, ("0xFF", "zero"))
    if evidence.differing:
        evidence.reason = f"{never}, and the result changes with what it held: {evidence.where}"
        return Confirmation.CONSEQUENTIAL, evidence
    evidence.reason = f"{never}, and the result is bit-identical under 0xFF and zero poison: the value is masked out"
    return Confirmation.BENIGN, evidence
