"""A sweep the service runs marks the jobs that a later job like them follows past the first wave (`warm_next`), so a
GPU worker readies a spare only where a job will take it; resuming the sweep planned for other slots still takes
back the jobs it sent."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, Store
from cuprobe.service.models import ProbeRequest, SanitizerOptions, Tool
from cuprobe.service.queue.submit import submit
from cuprobe.service.sweep.adopt import labelled, sweep_label
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import ServiceRunner, requests_of
from cuprobe.service.sweep.plan import plan
from cuprobe.service.sweep.warm_plan import warm_followed

NARROW = {"m": 32, "k": 32, "tile": 32, "variants": ["unguarded", "guarded"]}


def _narrow(n: int, tool: Tool = Tool.INITCHECK, **extra: object) -> ProbeRequest:
    return ProbeRequest(probe="narrow-matmul", tool=tool, params={**NARROW, "n": [n]}, **extra)  # type: ignore[arg-type]


def test_the_first_n_minus_k_of_each_group_are_marked() -> None:
    twelve = [_narrow(n) for n in range(1, 13)]
    assert warm_followed(twelve, 4) == set(range(8))
    assert warm_followed(twelve, 12) == set() and warm_followed(twelve, 16) == set()  # one wave: no spare used
    assert warm_followed(twelve, 0) == set(range(11))  # at least one slot


def test_runs_under_another_command_are_other_groups() -> None:
    requests = [_narrow(1), _narrow(2, Tool.MEMCHECK), _narrow(3), _narrow(4, Tool.MEMCHECK), _narrow(5)]
    # initcheck: 0, 2, 4 (two marked at K = 1); memcheck: 1, 3 (one marked)
    assert warm_followed(requests, 1) == {0, 2, 1}
    other = [_narrow(1), _narrow(2, options=SanitizerOptions(check_api_memory_access=False))]
    assert warm_followed(other, 1) == set()
    torch = {**NARROW, "variants": ["torch"], "n": [1]}
    mixed = [_narrow(1), ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=torch)]
    assert warm_followed(mixed, 1) == set()  # torch's start-up is another spare's


def test_bare_runs_and_the_users_programs_are_never_marked() -> None:
    bare = [ProbeRequest(probe="selftest", tool=Tool.NONE, params={}) for _ in range(4)]
    assert warm_followed(bare, 1) == set()
    command = [
        ProbeRequest(probe="command", tool=Tool.MEMCHECK, params={"argv": ["./a.out", str(i)]}) for i in range(4)
    ]
    assert warm_followed(command, 1) == set()


def _setup(tmp_path: Path) -> tuple[Settings, Store]:
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'c.db'}")
    store = Store(settings.database)
    store.migrate()
    return settings, store


GRID = (
    'name = "waves"\n[[entry]]\nprobe = "selftest"\ntool = "initcheck"\n'
    'grid = { behaviour = ["ok", "violate"], seconds = [0.0, 0.1, 0.2] }\n'
)


def test_the_service_runner_marks_its_jobs_and_a_resume_for_other_slots_takes_them_back(tmp_path: Path) -> None:
    settings, store = _setup(tmp_path)
    sent: list[Job] = []
    requests = [r for _, r in requests_of(plan(parse_definition(GRID), 2))]
    label = sweep_label("c" * 32)
    specs = ServiceRunner(store, settings, sent.append, slots=2, label=label).specs(requests)
    assert [s.warm_next for s in specs] == [True] * 4 + [False] * 2  # six like jobs at K = 2
    off = settings.model_copy(update={"warm_starts": False})
    assert not any(s.warm_next for s in ServiceRunner(store, off, sent.append, slots=2).specs(requests))
    ids = [submit(spec, store, settings, sent.append).id for spec in specs]
    # Resumed where the workers now have 6 slots: no job is marked, and every job sent is taken back.
    again = ServiceRunner(store, settings, sent.append, slots=6, label=label).specs(requests)
    assert not any(s.warm_next for s in again)
    assert labelled(store, label, again, settings).found == dict(enumerate(ids))
