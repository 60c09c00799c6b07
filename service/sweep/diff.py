"""What changed between two sweeps of one definition, by (signature, case): new, fixed, persisting, flaky."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from service.models.sweep import CaseSeen, SweepSeen


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
        """True when someone should hear about it: anything new, fixed, flaky or no longer checked."""
        return bool(self.new or self.fixed or self.flaky or self.unverified)


def _version_change(sweep: SweepSeen, previous: SweepSeen) -> str | None:
    parts = []
    if sweep.sanitizer_version != previous.sanitizer_version:
        parts.append(f"sanitizer {previous.sanitizer_version} -> {sweep.sanitizer_version}")
    if sweep.driver != previous.driver:
        parts.append(f"driver {previous.driver} -> {sweep.driver}")
    return ", ".join(parts) or None


def _setup_change(case: CaseSeen, base: CaseSeen | None) -> str | None:
    """'old -> new' when the case ran with other fixed params or options than its baseline (both recorded)."""
    if base is None or base.setup is None or case.setup is None or base.setup == case.setup:
        return None
    return f"{base.setup or 'no params or options'} -> {case.setup or 'no params or options'}"


def _findings(case: CaseSeen | None) -> dict[str, tuple[int, str | None]]:
    return {f.signature: (f.count, f.seen) for f in case.findings if not f.fallout} if case else {}


def _baseline(
    case: CaseSeen, previous: SweepSeen | None, before: dict[str, CaseSeen], earlier: Mapping[str, SweepSeen]
) -> tuple[SweepSeen | None, CaseSeen | None]:
    """The sweep and case a current case is compared with: the previous sweep's, when that ran it; else, for a
    case that ran now, its last run before that (earlier_runs); else the previous sweep's case that did not run."""
    old = before.get(case.key)
    if (old is None or not old.outcome.ran) and case.outcome.ran and case.key in earlier:
        older = earlier[case.key]
        return older, next((c for c in older.cases if c.key == case.key), None)
    return previous, old


def diff(sweep: SweepSeen, previous: SweepSeen | None, earlier: Mapping[str, SweepSeen] | None = None) -> SweepDiff:
    """Classify every (case, signature) of both sweeps; new ones seen only after a version change say so.

    `earlier` holds, for cases the previous sweep could not run or did not have, the last sweep in which each ran
    (SweepStore.earlier_runs): those cases are compared with that run, and their items name it in `against`."""
    out = SweepDiff(sweep=sweep.id, previous=previous.id if previous else None, definition=sweep.definition)
    out.version_change = _version_change(sweep, previous) if previous else None
    before = {c.key: c for c in previous.cases} if previous else {}
    for case in sweep.cases:
        base_sweep, base = _baseline(case, previous, before, earlier or {})
        against = base_sweep.id if base_sweep is not None and base_sweep is not previous else None
        change = _version_change(sweep, base_sweep) if base_sweep is not None else None
        setup = _setup_change(case, base)
        then = _findings(base)
        now = _findings(case)
        for signature, (count, seen) in now.items():
            old = then.get(signature)
            item = DiffItem(case=case.key, signature=signature, count=count, seen=seen, against=against)
            item.previous_count = old[0] if old else None
            if case.flaky or (seen is not None and seen.split("/")[0] != seen.split("/")[1]):
                item.note = f"seen {seen}" if seen else "outcomes differed between repeats"
                out.flaky.append(item)
            elif old is not None:
                out.persisting.append(item)
            else:
                if change:
                    item.note = f"new only since the version changed ({change}): may be the tool, not the code"
                if setup:
                    item.note = "; ".join(p for p in (item.note, f"new since the case's setup changed ({setup})") if p)
                out.new.append(item)
        for signature, (count, seen) in then.items():
            if signature in now:
                continue
            item = DiffItem(case=case.key, signature=signature, previous_count=count, seen=seen, against=against)
            if not case.outcome.ran:
                item.note = f"the case could not run this time ({case.outcome}): {case.message}"
                out.unverified.append(item)
            elif setup:  # gone under other parameters or options: not the same check, so not a fix
                item.note = f"the case now runs with another setup ({setup}): not seen, not called fixed"
                out.unverified.append(item)
            else:
                if change:
                    item.note = f"gone since the version changed ({change})"
                out.fixed.append(item)
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
