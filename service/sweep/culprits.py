"""After a sweep of a team's repository: bisect each new finding of a [[test]] case over the commits since the last
sweep that did not show it, and each fixed one over the commits since the last sweep that did."""

from __future__ import annotations

import shutil

from cuprobe.service.config import Settings
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import ProbeRequest
from cuprobe.service.models.bisect import Bisection, SweepSource
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.sweep.bisect import Bisector, Target
from cuprobe.service.sweep.checkout import remove_worktree
from cuprobe.service.sweep.definition import SweepDefinition
from cuprobe.service.sweep.diff import DiffItem, SweepDiff
from cuprobe.service.sweep.own_tests import Checkout, test_processes


def bisect_changes(
    sweep: Sweep,
    changes: SweepDiff,
    sweeps: SweepStore,
    definition: SweepDefinition,
    checkout: Checkout,
    settings: Settings,
    mode: str = "local",
    step: list[str] | None = None,
) -> list[Bisection]:
    """One Bisection per new or fixed finding of a [[test]] case; none for the first sweep of a definition (there is
    no earlier commit known to be without them)."""
    repo, source = definition.repo, sweep.source
    if changes.previous is None or source is None or repo is None:
        return []
    tests = {p.cases[0].key: p for p in test_processes(definition, checkout.path, 0)}
    cases = {c.key: c for c in sweep.cases}
    commits: dict[str, str | None] = {}
    out: list[Bisection] = []
    for direction, items in (("new", changes.new), ("fixed", changes.fixed)):
        for item in items:
            process, case = tests.get(item.case), cases.get(item.case)
            if process is None or case is None:
                continue  # a probe's case, not a test of the repository
            if case.control:
                continue  # a positive control's planted defect: no commit brought it
            good = _commit_of(sweeps, item, changes, source, commits)
            target = Target(
                direction="new" if direction == "new" else "fixed",
                case=item.case,
                signature=item.signature,
                request=ProbeRequest(
                    probe="command",
                    tool=process.tool,
                    params=process.params,
                    timeout_s=process.timeout_s,
                    options=process.options,
                ),
                root=checkout.path,
                repeats=max(1, process.repeats),
            )
            if good is None:
                out.append(_no_range(target, sweep))
                continue
            place = settings.repos / "worktrees" / f"bisect-{sweep.id}-{len(out)}"
            bisector = Bisector(checkout.mirror, repo, settings, place, mode, step)
            runs = settings.data_dir / "sweeps" / sweep.id / f"bisect-{len(out)}"
            out.append(bisector.run(target, good, source.commit.hash, runs))
            shutil.rmtree(place, ignore_errors=True)
    return out


def _commit_of(
    sweeps: SweepStore, item: DiffItem, changes: SweepDiff, source: SweepSource, known: dict[str, str | None]
) -> str | None:
    """The commit of the sweep this item was compared with, when it ran against the same repository and branch."""
    base_id = item.against or changes.previous
    if base_id is None:
        return None
    if base_id not in known:
        base = sweeps.get(base_id)
        then = base.source if base is not None else None
        same = then is not None and (then.url, then.branch) == (source.url, source.branch)
        known[base_id] = then.commit.hash if then is not None and same else None
    return known[base_id]


def _no_range(target: Target, sweep: Sweep) -> Bisection:
    assert sweep.source is not None
    return Bisection(
        direction=target.direction,
        case=target.case,
        signature=target.signature,
        tool=str(target.request.tool),
        good="",
        bad=sweep.source.commit.hash,
        state="no-range",
        message="the sweep it is compared with ran no commit of this repository and branch: no range to bisect",
    )


def remove_checkout(checkout: Checkout) -> None:
    """The sweep's own worktree, once its tests and bisects are done (the mirror stays for the next night)."""
    remove_worktree(checkout.mirror, checkout.path)
    shutil.rmtree(checkout.path, ignore_errors=True)
