"""Grid cases packed into the processes of a sweep: K at once end together when their costs are even, and what only
some cases need (torch's import) is paid by as few processes as keeps them even."""

from __future__ import annotations

from collections.abc import Sequence

Need = str


def packed(
    costs: Sequence[float],
    needs: Sequence[frozenset[Need]],
    need_cost: dict[Need, float],
    groups: int,
    cap: int,
) -> list[list[int]]:
    """The indexes of `costs` split into at most `groups` non-empty groups of at most `cap` each, each group in the
    grid's order, the groups in the order of their first member.

    A group costs its members' costs plus, once, `need_cost` of each need any member has: a process whose cases use
    torch imports it once, whatever the number of such cases. So the members with a need go to as few groups as keep
    the costliest group cheapest: for each need in turn, every number of groups carrying it is tried (from the fewest
    `cap` allows), the members with needs placed first among the groups that carry them (each carrier charged the
    need's cost up front), then the rest, costliest first, each into the cheapest group with room (longest processing
    time first). The plan whose costliest group is cheapest wins; on a tie, the one with fewer carriers."""
    if not costs:
        return []
    groups = max(1, min(groups, len(costs)))
    cap = max(cap, -(-len(costs) // groups))
    having = {need: sum(need in n for n in needs) for need in sorted(set().union(*needs))}
    carriers = {need: min(groups, -(-count // cap)) for need, count in having.items()}
    best = _place(costs, needs, need_cost, groups, cap, carriers)
    best_worst = _worst(best, costs, needs, need_cost)
    for need, count in having.items():
        for m in range(carriers[need] + 1, min(groups, count) + 1):
            tried = _place(costs, needs, need_cost, groups, cap, {**carriers, need: m})
            if (worst := _worst(tried, costs, needs, need_cost)) < best_worst:
                best, best_worst, carriers = tried, worst, {**carriers, need: m}
    members = [sorted(g) for g in best if g]
    return sorted(members, key=lambda g: g[0])


def group_cost(
    members: Sequence[int], costs: Sequence[float], needs: Sequence[frozenset[Need]], need_cost: dict[Need, float]
) -> float:
    """What one group costs: its members' costs and each of their needs once."""
    paid: set[Need] = set().union(*(needs[i] for i in members)) if members else set()
    return sum(costs[i] for i in members) + sum(need_cost.get(need, 0.0) for need in paid)


def _worst(
    plan: list[list[int]], costs: Sequence[float], needs: Sequence[frozenset[Need]], need_cost: dict[Need, float]
) -> float:
    return max(group_cost(g, costs, needs, need_cost) for g in plan)


def _place(
    costs: Sequence[float],
    needs: Sequence[frozenset[Need]],
    need_cost: dict[Need, float],
    groups: int,
    cap: int,
    carriers: dict[Need, int],
) -> list[list[int]]:
    """One plan: need `n` carried by groups 0..carriers[n]-1 (so groups 0, 1, ... carry several needs together)."""
    loads = [sum(need_cost.get(n, 0.0) for n, m in carriers.items() if g < m) for g in range(groups)]
    members: list[list[int]] = [[] for _ in range(groups)]

    def allowed(i: int) -> int:  # the groups 0..allowed-1 carry every need of item i
        return min((carriers[n] for n in needs[i]), default=groups)

    # Members with needs first (fewest allowed groups first), then the rest; costliest first within each (stable).
    order = sorted(range(len(costs)), key=lambda i: (allowed(i), -costs[i]))
    for i in order:
        open_ = [g for g in range(allowed(i)) if len(members[g]) < cap]
        if not open_:  # every carrier full: a group beyond them takes on the need
            open_ = [g for g in range(groups) if len(members[g]) < cap]
        g = min(open_, key=lambda j: (loads[j], len(members[j]), j))
        members[g].append(i)
        loads[g] += costs[i]
    return members
