"""What changed between two sweeps of one definition, by (signature, case): new, fixed, persisting, flaky."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

from cuprobe.service.models.sweep import CaseSeen, SweepSeen, complete


class DiffItem(BaseModel):
    """One (signature, case) pair in a diff, with enough to read it without opening the sweep."""

    case: str
    signature: str
    count: int | None = None
    previous_count: int | None = None
    seen: str | None = None
    note: str = ""
    against: str | None = Field(
        None,
        description="the sweep this case was compared with, when not the previous one: the previous sweep could "
        "not run the case (or did not have it), so the comparison is with the case's last run",
    )
    again: bool = Field(False, description="flaky: flaky in the run it is compared with too (not news)")

    @property
    def explained(self) -> str:
        """The note, and the sweep this case was compared with where that is not the previous one."""
        against = f"compared with this case's last run, in sweep {self.against[:12]}" if self.against else ""
        return "; ".join(part for part in (self.note, against) if part)


class SweepDiff(BaseModel):
    """The diff of `sweep` against `previous` (none: the first sweep of its definition, everything is new)."""

    sweep: str
    previous: str | None
    definition: str
    new: list[DiffItem] = Field(default_factory=list)
    fixed: list[DiffItem] = Field(default_factory=list)
    persisting: list[DiffItem] = Field(default_factory=list)
    flaky: list[DiffItem] = Field(default_factory=list)
    unverified: list[DiffItem] = Field(
        default_factory=list,
        description="previous findings whose case could not run (or is gone): neither fixed nor seen",
    )
    version_change: str | None = Field(None, description="sanitizer or driver version change between the two sweeps")

    @property
    def changed(self) -> bool:
        """True when someone should hear about it: anything new, fixed or no longer checked, or a finding that
        turned flaky (one flaky in the run it is compared with too is not news)."""
        return bool(self.new or self.fixed or self.unverified or any(not i.again for i in self.flaky))


def _version_change(sweep: SweepSeen, previous: SweepSeen) -> str | None:
    """The sanitizer and driver versions that differ between two sweeps; an unknown one (None: a sweep that ran
    nothing records none) is not a change."""
    parts = []
    for what, now, then in (
        ("sanitizer", sweep.sanitizer_version, previous.sanitizer_version),
        ("driver", sweep.driver, previous.driver),
    ):
        if now is not None and then is not None and now != then:
            parts.append(f"{what} {then} -> {now}")
    return ", ".join(parts) or None


def _setup_change(case: CaseSeen, base: CaseSeen | None) -> str | None:
    """'old -> new' when the case ran with other fixed params or options than its baseline (both recorded)."""
    if base is None or base.setup is None or case.setup is None or base.setup == case.setup:
        return None
    return f"{base.setup or 'no params or options'} -> {case.setup or 'no params or options'}"


def _findings(case: CaseSeen | None) -> dict[str, tuple[int, str | None]]:
    return {f.signature: (f.count, f.seen) for f in case.findings if not f.fallout} if case else {}


def _unstable(seen: str | None, case_flaky: bool) -> bool:
    """A finding seen in only some repeats (k/n, k < n); without a count, the case's repeats disagreeing."""
    if seen is None:
        return case_flaky
    k, _, n = seen.partition("/")
    return k != n


@dataclass
class _Baseline:
    """What a case is compared with: the sweep and case, their findings, and the earlier sweep when not previous."""

    sweep: SweepSeen | None
    case: CaseSeen | None
    then: dict[str, tuple[int, str | None]]
    against: str | None = None


def _baseline(
    case: CaseSeen,
    previous: SweepSeen | None,
    before: dict[str, CaseSeen],
    earlier: Mapping[str, SweepSeen],
    index: dict[str, dict[str, CaseSeen]],
) -> _Baseline:
    """The previous sweep's case, when its run was complete; else, for a case that ran now, its last complete run
    (earlier_runs), with whatever the previous sweep's partial run (a timeout, a record cap) did see added to it."""
    old = before.get(case.key)
    if case.outcome.ran and (old is None or not complete(old)) and case.key in earlier:
        older_sweep = earlier[case.key]
        if older_sweep.id not in index:  # each earlier sweep indexed once, not once per case it holds
            index[older_sweep.id] = {c.key: c for c in older_sweep.cases}
        cases = index[older_sweep.id]
        older = cases.get(case.key)
        return _Baseline(older_sweep, older, {**_findings(older), **_findings(old)}, older_sweep.id)
    return _Baseline(previous, old, _findings(old))


def diff(sweep: SweepSeen, previous: SweepSeen | None, earlier: Mapping[str, SweepSeen] | None = None) -> SweepDiff:
    """Classify every (case, signature) of both sweeps; new ones seen only after a version change say so.

    `earlier` holds, for cases whose run in the previous sweep was missing or incomplete, the last sweep in which
    each ran completely (SweepStore.earlier_runs): those cases are compared with that run (and what the incomplete
    run saw), and their items name it in `against`."""
    out = SweepDiff(sweep=sweep.id, previous=previous.id if previous else None, definition=sweep.definition)
    out.version_change = _version_change(sweep, previous) if previous else None
    before = {c.key: c for c in previous.cases} if previous else {}
    index: dict[str, dict[str, CaseSeen]] = {}
    for case in sweep.cases:
        base = _baseline(case, previous, before, earlier or {}, index)
        change = _version_change(sweep, base.sweep) if base.sweep is not None else None
        setup = _setup_change(case, base.case)
        now = _findings(case)
        for signature, (count, seen) in now.items():
            old = base.then.get(signature)
            item = DiffItem(case=case.key, signature=signature, count=count, seen=seen, against=base.against)
            item.previous_count = old[0] if old else None
            if _unstable(seen, case.flaky):
                item.note = f"seen {seen}" if seen else "outcomes differed between repeats"
                item.again = old is not None and _unstable(old[1], False)
                out.flaky.append(item)
            elif old is not None:
                out.persisting.append(item)
            elif case.control:
                continue  # what a positive control plants is no new defect: it is how the sweep knows the tool works
            else:
                notes = (
                    [f"new only since the version changed ({change}): may be the tool, not the code"] if change else []
                )
                if setup:
                    notes.append(f"new since the case's setup changed ({setup})")
                if base.case is not None and base.case.truncated:
                    notes.append("the run it is compared with hit the record cap: it may have been there")
                item.note = "; ".join(notes)
                out.new.append(item)
        for signature, (count, seen) in base.then.items():
            if signature in now:
                continue
            item = DiffItem(case=case.key, signature=signature, previous_count=count, seen=seen, against=base.against)
            if not case.outcome.ran:
                item.note = f"the case could not run this time ({case.outcome}): {case.message}"
            elif case.truncated:
                item.note = "the record cap was reached this time: not every finding was kept, so not called fixed"
            elif _unstable(seen, False):  # seen in only some repeats before: not seeing it now proves nothing
                item.count, item.again = 0, True
                item.note = f"not seen this time; flaky before (seen {seen}): its absence is not a fix"
                out.flaky.append(item)
                continue
            elif setup:  # gone under other parameters or options: not the same check, so not a fix
                if base.against:
                    continue  # said unverified on the night the case stopped running
                item.note = f"the case now runs with another setup ({setup}): not seen, not called fixed"
            else:
                if change:
                    item.note = f"gone since the version changed ({change})"
                out.fixed.append(item)
                continue
            out.unverified.append(item)
    keys_now = {c.key for c in sweep.cases}
    for key, old_case in before.items():
        if key not in keys_now:
            for signature, (count, seen) in _findings(old_case).items():
                item = DiffItem(case=key, signature=signature, previous_count=count, seen=seen)
                item.note = "this case is not in the current sweep"
                out.unverified.append(item)
    for part in (out.new, out.fixed, out.persisting, out.flaky, out.unverified):
        part.sort(key=lambda i: (i.case, i.signature))
    return out
