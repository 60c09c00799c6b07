"""Packing a grid's cases into K processes: even costs, and a need (torch's import) paid by as few as keep them even."""

from __future__ import annotations

import pytest

from cuprobe.service.sweep.packing import group_cost, packed


def _check(plan: list[list[int]], count: int, groups: int, cap: int) -> None:
    flat = [i for g in plan for i in g]
    assert sorted(flat) == list(range(count)), "each item in exactly one group"
    assert 0 < len(plan) <= groups and all(0 < len(g) <= cap for g in plan)
    assert all(g == sorted(g) for g in plan) and [g[0] for g in plan] == sorted(g[0] for g in plan)


def test_without_needs_the_costs_come_out_even() -> None:
    costs = [992.0 - 32 * (i % 32) for i in range(128)]  # a tile's records falling along n, four times
    none: list[frozenset[str]] = [frozenset()] * 128
    plan = packed(costs, none, {}, 8, 512)
    _check(plan, 128, 8, 512)
    totals = [group_cost(g, costs, none, {}) for g in plan]
    assert max(totals) - min(totals) <= 32  # one step of the falling cost at most
    # Consecutive chunks would not have been: the first and last carry the same tiles, but that is luck of the grid.


def test_a_costly_need_is_carried_by_one_group_that_carries_less_else() -> None:
    costs = [100.0] * 64 + [10.0] * 32
    needs = [frozenset()] * 64 + [frozenset({"torch"})] * 32
    plan = packed(costs, needs, {"torch": 300.0}, 4, 512)
    _check(plan, 96, 4, 512)
    carriers = [g for g in plan if any(i >= 64 for i in g)]
    assert len(carriers) == 1 and set(range(64, 96)) <= set(carriers[0])
    totals = [group_cost(g, costs, needs, {"torch": 300.0}) for g in plan]
    assert max(totals) - min(totals) <= 100  # one item's cost
    assert sum(1 for i in carriers[0] if i < 64) < 16  # it carries fewer of the others to make up for the need


def test_a_free_need_still_goes_to_the_fewest_groups_and_a_cap_spreads_it() -> None:
    costs = [10.0] * 40
    needs = [frozenset({"torch"}) if i % 4 == 0 else frozenset() for i in range(40)]
    plan = packed(costs, needs, {"torch": 0.0}, 4, 512)
    assert sum(any(needs[i] for i in g) for g in plan) == 1  # 10 such items are an even share: a tie, fewer carriers
    capped = packed(costs, needs, {"torch": 0.0}, 8, 5)
    _check(capped, 40, 8, 5)
    assert sum(any(needs[i] for i in g) for g in capped) == 2  # at most 5 a group


def test_a_need_worth_splitting_is_split() -> None:
    costs = [1.0] * 8 + [50.0] * 8  # the needing items are the costly ones
    needs = [frozenset()] * 8 + [frozenset({"torch"})] * 8
    plan = packed(costs, needs, {"torch": 5.0}, 4, 512)
    _check(plan, 16, 4, 512)
    assert sum(any(needs[i] for i in g) for g in plan) == 4  # one carrier would cost 405 against 107 for four


@pytest.mark.parametrize("groups", [1, 3, 50])
def test_more_groups_than_items_or_one_group(groups: int) -> None:
    costs = [5.0, 1.0, 3.0]
    plan = packed(costs, [frozenset()] * 3, {}, groups, 512)
    _check(plan, 3, min(groups, 3), 512)
    assert packed([], [], {}, 4, 512) == []
