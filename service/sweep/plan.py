"""Expand a definition into cases and group them into processes: batched where findings can be attributed."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pydantic import ValidationError

from cuprobe.contract import Tool
from cuprobe.probes.narrow_matmul import NarrowMatmulParams, case_id, expected_uninit_reads, part_of_product
from cuprobe.service.config import get_settings
from cuprobe.service.models import ProbeRequest, SanitizerOptions
from cuprobe.service.models.problems import describe
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.confirm import refuse_unconfirmable
from cuprobe.service.sweep.definition import DefinitionError, Entry, SweepDefinition
from cuprobe.service.sweep.packing import packed

Point = dict[str, Any]


@dataclass(frozen=True)
class PlannedCase:
    """One grid point of one entry under one tool; `probe_case` is the probe's case id inside a batch."""

    key: str
    entry: str
    probe: str
    tool: Tool
    point: dict[str, Any]
    probe_case: str | None = None
    control: bool = False
    added: bool = False  # not a grid case: run only to carry the batch's positive control
    setup: str = ""  # what it runs with beyond its grid point (setup_of): a diff reads a change as "not the same check"


@dataclass
class Process:
    """One probe process (run `repeats` times): its parameters and the cases whose findings it holds."""

    index: int
    probe: str
    tool: Tool
    params: dict[str, Any]
    cases: list[PlannedCase]
    batched: bool
    reason: str = ""
    control: str | None = None
    repeats: int = 1
    timeout_s: float | None = None
    extra_cases: list[str] = field(default_factory=list)
    options: SanitizerOptions = field(default_factory=SanitizerOptions)


class NarrowMatmulBatching:
    """narrow-matmul records every case's device buffers, so one process can run many (variants, n) grid points."""

    probe = "narrow-matmul"
    axes = frozenset({"n", "variants"})
    control_point: ClassVar[Point] = {
        "variants": "unguarded",
        "n": 1,
    }  # 31 padding rows at tile 32: always reads padding

    def why_not(self, tool: Tool, axes: set[str]) -> str | None:
        if tool is not Tool.INITCHECK:
            return f"narrow-matmul has no positive control under {tool}, and every batched process needs one"
        if not axes <= self.axes:
            return f"only the n and variants axes batch; this grid also varies {', '.join(sorted(axes - self.axes))}"
        return None

    @staticmethod
    def label(point: Point) -> str:
        return case_id(point["variants"], point["n"])

    @staticmethod
    def params(fixed: dict[str, Any], points: list[Point]) -> dict[str, Any]:
        """The probe's parameters that run exactly `points`: their n values and variants, and `cases` where the
        points are only part of that product."""
        ns = list(dict.fromkeys(int(p["n"]) for p in points))
        variants = list(dict.fromkeys(str(p["variants"]) for p in points))
        cases = part_of_product(variants, ns, {(str(p["variants"]), int(p["n"])) for p in points})
        return {**fixed, "n": ns, "variants": variants, **({"cases": cases} if cases is not None else {})}

    @staticmethod
    def needs(point: Point) -> frozenset[str]:
        """What a grid point's process loads beyond the probe's own start: torch, for the torch variant."""
        return frozenset({"torch"}) if point["variants"] == "torch" else frozenset()

    @staticmethod
    def is_control(fixed: dict[str, Any], point: Point) -> bool:
        return NarrowMatmulBatching.records(fixed, point) > 0

    @staticmethod
    def records(fixed: dict[str, Any], point: Point) -> int:
        """The initcheck records this grid point makes (the probe's own count of its unwritten loads)."""
        p = NarrowMatmulParams.model_validate({**fixed, "n": [point["n"]]})
        return expected_uninit_reads(p.m, p.k, int(point["n"]), p.tile, point["variants"])

    @staticmethod
    def cost(fixed: dict[str, Any], point: Point) -> float:
        """A grid point's share of a sanitizer process's run, in records: its records (each a report the
        sanitizer's host side writes) plus CASE_RECORDS for the case itself (its launches, allocations and copies)."""
        return NarrowMatmulBatching.records(fixed, point) + CASE_RECORDS


BATCHING = {NarrowMatmulBatching.probe: NarrowMatmulBatching()}

# What one grid point costs beside its records, counted in records. An estimate (the H200's 384-case grid at K = 1:
# 42.6 s for 63,488 records and 384 cases, docs/sweep.md): a record costs about 0.6 ms and a case a few ms. Only the
# balance between batches depends on it, and there the records dominate wherever a grid makes many.
CASE_RECORDS = 16
# What a process pays once for a need of its cases, in records. torch: its import takes 3.9-4.8 s on its own thread
# in each process of the 384-case grid at K = 8 on an H100, and the kernel cases beside it run 0.6-1.6 s slower than
# with a late import; a record costs about 0.5 ms there (7,936 a process in 4-5 s). So about 1.5 s, 3,000 records:
# enough that one process carries a grid's torch cases (1,000 made the sweep slower; docs/sweep.md, "How cases
# become processes").
NEED_RECORDS = {"torch": 3_000.0}


def _points(entry: Entry) -> list[Point]:
    axes = entry.axes()
    if not axes:
        return [{}]
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def _generic_label(point: Point) -> str:
    return ",".join(f"{k}={v}" for k, v in point.items()) or "default"


def _singles(entry: Entry, tool: Tool, points: list[Point], reason: str, start: int, repeats: int) -> list[Process]:
    batching = BATCHING.get(entry.probe)
    out = []
    for offset, point in enumerate(points):
        if batching is not None and set(point) <= batching.axes and point:
            label, params = batching.label(point), batching.params(entry.params, [point])
            probe_case: str | None = label
        else:
            label, params, probe_case = _generic_label(point), {**entry.params, **point}, None
        case = PlannedCase(f"{entry.name}/{tool}/{label}", entry.name, entry.probe, tool, point, probe_case)
        out.append(
            Process(
                start + offset,
                entry.probe,
                tool,
                params,
                [case],
                False,
                reason,
                None,
                repeats,
                entry.timeout_s,
                options=entry.options,
            )
        )
    return out


def _batches(entry: Entry, tool: Tool, points: list[Point], start: int, repeats: int, slots: int) -> list[Process]:
    """The grid's cases packed into processes (service/sweep/packing.py), each running exactly its cases.

    At least `slots` processes where the grid allows, so K sanitizer processes on one GPU all have work, with the
    cases spread so the processes' costs (records and cases, `batching.cost`, and once per process each need of its
    cases, NEED_RECORDS) are as even as the grid allows: the cases that use torch go to as few processes as that
    allows, and the others never import it."""
    batching = BATCHING[entry.probe]
    groups = min(len(points), max(slots, -(-len(points) // entry.batch_size)))
    costs = [batching.cost(entry.params, p) for p in points]
    needs = [batching.needs(p) for p in points]
    out: list[Process] = []
    for group in packed(costs, needs, NEED_RECORDS, groups, entry.batch_size):
        chunk = [points[i] for i in group]
        cases = [
            PlannedCase(
                f"{entry.name}/{tool}/{batching.label(p)}",
                entry.name,
                entry.probe,
                tool,
                p,
                batching.label(p),
                control=batching.is_control(entry.params, p),
            )
            for p in chunk
        ]
        if not any(c.control for c in cases):
            # No grid case here is a positive control: add one, so a silent instrument cannot read as clean.
            control = dict(batching.control_point)
            control_label = batching.label(control)
            cases.append(
                PlannedCase(
                    f"{entry.name}/{tool}/control-{control_label}@{len(out)}",
                    entry.name,
                    entry.probe,
                    tool,
                    control,
                    control_label,
                    control=True,
                    added=True,
                )
            )
        else:
            control_label = next(c.probe_case for c in cases if c.control) or ""
        out.append(
            Process(
                start + len(out),
                entry.probe,
                tool,
                batching.params(entry.params, [c.point for c in cases]),  # exactly its cases, any added control too
                cases,
                True,
                "",
                control_label,
                repeats,
                entry.timeout_s,
                options=entry.options,
            )
        )
    return out


def _admitted(entry: Entry, processes: list[Process]) -> list[Process]:
    """`processes` if each one's request passes admission; DefinitionError names the entry and the field."""
    for process in processes:
        try:
            admit(process.probe, process.tool, process.params, process.options)
        except BadRequest as exc:
            raise DefinitionError(f"entry {entry.name} ({process.cases[0].key}): {exc}") from exc
    return processes


def plan(definition: SweepDefinition, slots: int = 1) -> list[Process]:
    """Every process the sweep runs, in order; each case appears in exactly one process, and each process's
    request passed admission (DefinitionError before anything runs when one does not).

    `slots` is how many processes will run at once: batches are split so each slot gets one."""
    processes: list[Process] = []
    for entry in definition.entries:
        try:
            processes += _entry(definition, entry, slots, len(processes))
        except DefinitionError:
            raise
        except ValueError as exc:  # a grid value the probe's own parameter model refuses while batches are costed
            said = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            raise DefinitionError(f"entry {entry.name}: {said}") from exc
    counted = Counter(case.key for process in processes for case in process.cases)
    if repeated := sorted(key for key, n in counted.items() if n > 1):
        raise DefinitionError(f"cases {', '.join(repeated[:5])} would run twice: each case key must be unique")
    return processes


def _entry(definition: SweepDefinition, entry: Entry, slots: int, start: int) -> list[Process]:
    """The processes of one entry, numbered from `start`: batched where its probe attributes findings per case."""
    processes: list[Process] = []
    points = _points(entry)
    repeats = entry.repeats or definition.repeats
    settings = get_settings()
    for tool in entry.tools:
        # Once per tool, not per process: whether the confirmation can check itself depends on the probe, the tool
        # and the options, never on a grid point.
        try:
            asked = ProbeRequest(probe=entry.probe, tool=tool, params=entry.params, options=entry.options)
            refuse_unconfirmable(asked, tool, settings)
        except BadRequest as exc:
            raise DefinitionError(f"entry {entry.name} ({tool}): {exc}") from exc
        batching = BATCHING.get(entry.probe)
        if not entry.batch:
            why: str | None = "batching turned off for this entry"
        elif batching is None:
            why = f"{entry.probe} records no per-case allocation map: findings could not be attributed"
        else:
            why = batching.why_not(tool, set(entry.grid))
        if tool is Tool.RACECHECK and batching is not None:
            why = "racecheck reports shared-memory addresses, which no allocation map holds"
        if why is None and len(points) > 1:
            processes += _admitted(entry, _batches(entry, tool, points, start + len(processes), repeats, slots))
        else:
            processes += _admitted(
                entry, _singles(entry, tool, points, why or "a single case", start + len(processes), repeats)
            )
    setup = setup_of(entry)
    for process in processes:
        process.cases = [replace(case, setup=setup) for case in process.cases]
    return processes


def setup_of(entry: Entry) -> str:
    """What every case of `entry` runs with beyond its grid point, as canonical text: the fixed parameters and the
    sanitizer options (not in the case key: a case keeps its history when they change, and a diff says so)."""
    parts = [f"params {json.dumps(entry.params, sort_keys=True, default=str)}"] if entry.params else []
    if options := entry.options.checking_key():
        parts.append(f"options {options}")
    return "; ".join(parts)
