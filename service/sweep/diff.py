"""What changed between two sweeps of one definition, by (signature, case): new, fixed, persisting, flaky."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from service.models import Outcome


class FindingSeen(Protocol):
    """What a diff reads of a finding (a Finding, or the store's lean row of one)."""

    @property
    def signature(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def seen(self) -> str | None: ...
    @property
    def fallout(self) -> bool: ...


class CaseSeen(Protocol):
    """What a diff reads of a sweep case."""

    @property
    def key(self) -> str: ...
    @property
    def outcome(self) -> Outcome: ...
    @property
    def flaky(self) -> bool: ...
    @property
    def message(self) -> str: ...
    @property
    def findings(self) -> Sequence[FindingSeen]: ...


class SweepSeen(Protocol):
    """What a diff reads of a sweep: a Sweep, or SweepStore.for_diff's lean copy of one."""

    @property
    def id(self) -> str: ...
    @property
    def definition(self) -> str: ...
    @property
    def sanitizer_version(self) -> str | None: ...
    @property
    def driver(self) -> str | None: ...
    @property
    def cases(self) -> Sequence[CaseSeen]: ...


class DiffItem(BaseModel):
    """One (signature, case) pair in a diff, with enough to read it without opening the sweep."""

    case: str
    signature: str
    count: int | None = None
    previous_count: int | None = None
    seen: str | None = None
    note: str = ""


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
        """True when someone should hear about it: anything new, fixed, flaky or no longer checked."""
        return bool(self.new or self.fixed or self.flaky or self.unverified)


def _version_change(sweep: SweepSeen, previous: SweepSeen) -> str | None:
    parts = []
    if sweep.sanitizer_version != previous.sanitizer_version:
        parts.append(f"sanitizer {previous.sanitizer_version} -> {sweep.sanitizer_version}")
    if sweep.driver != previous.driver:
        parts.append(f"driver {previous.driver} -> {sweep.driver}")
    return ", ".join(parts) or None


def _pairs(sweep: SweepSeen) -> dict[tuple[str, str], tuple[CaseSeen, int, str | None]]:
    return {(c.key, f.signature): (c, f.count, f.seen) for c in sweep.cases for f in c.findings if not f.fallout}


def diff(sweep: SweepSeen, previous: SweepSeen | None) -> SweepDiff:
    """Classify every (case, signature) of both sweeps; new ones seen only after a version change say so."""
    out = SweepDiff(sweep=sweep.id, previous=previous.id if previous else None, definition=sweep.definition)
    now = _pairs(sweep)
    before = _pairs(previous) if previous else {}
    out.version_change = _version_change(sweep, previous) if previous else None
    for (key, signature), (case, count, seen) in sorted(now.items()):
        item = DiffItem(case=key, signature=signature, count=count, seen=seen)
        old = before.get((key, signature))
        item.previous_count = old[1] if old else None
        if case.flaky or (seen is not None and seen.split("/")[0] != seen.split("/")[1]):
            item.note = f"seen {seen}" if seen else "outcomes differed between repeats"
            out.flaky.append(item)
        elif old is not None:
            out.persisting.append(item)
        else:
            if out.version_change:
                item.note = f"new only since the version changed ({out.version_change}): may be the tool, not the code"
            out.new.append(item)
    cases_now = {c.key: c for c in sweep.cases}
    for (key, signature), (_case, count, seen) in sorted(before.items()):
        if (key, signature) in now:
            continue
        item = DiffItem(case=key, signature=signature, previous_count=count, seen=seen)
        current = cases_now.get(key)
        if current is None:
            item.note = "this case is not in the current sweep"
            out.unverified.append(item)
        elif not current.outcome.ran:
            item.note = f"the case could not run this time ({current.outcome}): {current.message}"
            out.unverified.append(item)
        else:
            if out.version_change:
                item.note = f"gone since the version changed ({out.version_change})"
            out.fixed.append(item)
    return out
