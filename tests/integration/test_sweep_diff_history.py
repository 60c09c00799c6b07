"""A case the previous sweep could not run is compared with its last real run, on SQLite and PostgreSQL: a finding
that comes back after a night of `unavailable` persists (it is not new, it rings no webhook), and one that is gone
after such a night is fixed. The CLI's diff reads it this way
(the API, the dashboard and the webhook call the same service.sweep.compare.changes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import Finding, Outcome, Tool
from cuprobe.service.models.sweep import Sweep, SweepCase
from cuprobe.service.sweep.compare import NotAResult, changes
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.notify import payload as notify_payload
from cuprobe.service.sweep.plan import plan

START = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
LOAD = "initcheck|uninitialized-global-read|tile_load|kernels/narrow_matmul.cu:23|global-read-4"
STORE = "initcheck|uninitialized-global-read|epilogue|kernels/narrow_matmul.cu:41|global-read-4"
LATE = "initcheck|uninitialized-global-read|late|kernels/narrow_matmul.cu:52|global-read-4"


def _case(
    key: str,
    outcome: Outcome,
    *signatures: str,
    setup: str | None = None,
    truncated: bool = False,
    seen: dict[str, str] | None = None,
) -> SweepCase:
    findings = [
        Finding(
            signature=s,
            tool=Tool.INITCHECK,
            kind="uninitialized-global-read",
            message="read",
            count=3,
            seen=(seen or {}).get(s),
        )
        for s in signatures
    ]
    message = "no GPU on this worker" if outcome is Outcome.UNAVAILABLE else ""
    return SweepCase(
        key=f"narrow-matmul/initcheck/{key}",
        entry="narrow-matmul",
        probe="narrow-matmul",
        tool=Tool.INITCHECK,
        process=0,
        batched=True,
        outcome=outcome,
        message=message,
        findings=findings,
        setup=setup,
        truncated=truncated,
        flaky=any(k != n for k, _, n in (v.partition("/") for v in (seen or {}).values())),
    )


def _save(
    sweeps: SweepStore, night: int, *cases: SweepCase, version: str | None = "2026.4.0.0", suffix: str = "ab"
) -> Sweep:
    started = START + timedelta(days=night)
    sweep = Sweep(
        id=f"{night:02d}" + suffix * 15,
        definition="nightly",
        state="done",
        started_at=started,
        finished_at=started + timedelta(minutes=30),
        sanitizer_version=version,
        driver="580.159.04" if version else None,
        cases=list(cases),
    )
    sweeps.save(sweep)
    return sweep


def _parts(sweeps: SweepStore, sweep: Sweep) -> dict[str, list[tuple[str, str | None]]]:
    found = changes(sweeps, sweep)
    parts = ("new", "fixed", "persisting", "flaky", "unverified")
    return {p: [(i.case.rsplit("/", 1)[1], i.against) for i in getattr(found, p)] for p in parts if getattr(found, p)}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_case_is_compared_with_its_last_real_run(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}" if backend == "sqlite" else request.getfixturevalue("pg_schema_url")
    store = Store(url)
    store.migrate()
    sweeps = SweepStore(store)
    A, U = Outcome.FINDINGS, Outcome.UNAVAILABLE
    first = _save(sweeps, 1, _case("back", A, LOAD), _case("gone", A, STORE), _case("quiet", Outcome.CLEAN))
    assert _parts(sweeps, first) == {"new": [("back", None), ("gone", None)]}

    # Night 2: the GPU was gone for two cases. Their findings are unverified: neither fixed nor seen.
    second = _save(sweeps, 2, _case("back", U), _case("gone", U), _case("quiet", Outcome.CLEAN))
    assert _parts(sweeps, second) == {"unverified": [("back", None), ("gone", None)]}

    # Night 3: both could not run again. That is no news: nothing is reported twice, nothing is fixed.
    third = _save(sweeps, 3, _case("back", U), _case("gone", U), _case("quiet", Outcome.CLEAN))
    assert _parts(sweeps, third) == {}

    # Night 4: they run again. The finding that is back persists, the one that is gone is fixed, both compared with
    # night 1, the last night they ran; a case that never had a finding reads as before.
    fourth = _save(sweeps, 4, _case("back", A, LOAD), _case("gone", Outcome.CLEAN), _case("quiet", A, LATE))
    assert _parts(sweeps, fourth) == {
        "new": [("quiet", None)],
        "fixed": [("gone", first.id)],
        "persisting": [("back", first.id)],
    }
    found = changes(sweeps, fourth)
    assert found.previous == third.id and found.persisting[0].previous_count == 3

    # Night 5 compares with night 4 again, which ran every case.
    fifth = _save(sweeps, 5, _case("back", A, LOAD), _case("gone", Outcome.CLEAN), _case("quiet", A, LATE))
    assert _parts(sweeps, fifth) == {"persisting": [("back", None), ("quiet", None)]}

    # A case new to the definition, after a night it could not run, has nothing to compare with: its finding is new.
    sixth = _save(sweeps, 6, _case("back", A, LOAD), _case("added", U))
    seventh = _save(sweeps, 7, _case("back", A, LOAD), _case("added", A, LATE))
    # (and "quiet", no longer in the definition, leaves its finding unverified)
    assert _parts(sweeps, sixth) == {"persisting": [("back", None)], "unverified": [("quiet", None)]}
    assert _parts(sweeps, seventh) == {"new": [("added", None)], "persisting": [("back", None)]}
    store.engine.dispose()


def test_cuprobe_sweep_diff_compares_with_the_last_real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cuprobe sweep diff` exits 0 when the only change is a finding back after a night it could not run."""
    monkeypatch.setenv("CUPROBE_DATA_DIR", str(tmp_path))
    store = Store(f"sqlite:///{tmp_path / 'cuprobe.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    first = _save(sweeps, 1, _case("back", Outcome.FINDINGS, LOAD))
    _save(sweeps, 2, _case("back", Outcome.UNAVAILABLE))
    third = _save(sweeps, 3, _case("back", Outcome.FINDINGS, LOAD))
    answer = CliRunner().invoke(app, ["sweep", "diff", third.id, "--json"])
    assert answer.exit_code == 0, answer.output
    said = json.loads(answer.output)
    assert not said["new"] and [i["against"] for i in said["persisting"]] == [first.id]
    store.engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_finding_gone_after_the_setup_changed_is_not_called_fixed(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Fixed params and options are not in a case's key (its history survives a change of them), so a finding gone
    after `params` or `options` changed is unverified, not fixed; one that appears is new and says why."""
    url = f"sqlite:///{tmp_path / 'd.db'}" if backend == "sqlite" else request.getfixturevalue("pg_schema_url")
    store = Store(url)
    store.migrate()
    sweeps = SweepStore(store)
    definition = parse_definition(
        'name = "nightly"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\nparams = {k = 100}\n'
        "grid = {n = [256, 1024]}\noptions = {track_unused_memory = true}\n"
    )
    planned = [case for process in plan(definition) for case in process.cases]
    assert {c.setup for c in planned} == {'params {"k": 100}; options track-unused-memory'}
    before, after = planned[0].setup, 'params {"k": 100}'
    _save(sweeps, 1, _case("a", Outcome.FINDINGS, LOAD, setup=before), _case("b", Outcome.FINDINGS, LOAD, setup=before))
    lean = sweeps.for_diff(f"{1:02d}" + "ab" * 15)
    assert lean is not None and {c.setup for c in lean.cases} == {before}
    second = _save(sweeps, 2, _case("a", Outcome.CLEAN, setup=after), _case("b", Outcome.FINDINGS, LATE, setup=after))
    found = changes(sweeps, second)
    assert not found.fixed and [(i.case[-1], i.signature) for i in found.unverified] == [("a", LOAD), ("b", LOAD)]
    assert all("setup" in i.note and before in i.note for i in found.unverified)
    assert [i.case[-1] for i in found.new] == ["b"] and "setup changed" in found.new[0].note
    # A case stored before setups were recorded (None) compares as before: gone is fixed.
    third = _save(sweeps, 3, _case("a", Outcome.FINDINGS, LOAD, setup=None), _case("b", Outcome.CLEAN, setup=after))
    fourth = _save(sweeps, 4, _case("a", Outcome.CLEAN, setup=after), _case("b", Outcome.CLEAN, setup=after))
    assert [i.case[-1] for i in changes(sweeps, third).new] == ["a"]
    assert [i.case[-1] for i in changes(sweeps, fourth).fixed] == ["a"]
    store.engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def sweeps(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SweepStore]:
    url = f"sqlite:///{tmp_path / 'd.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_schema_url")
    store = Store(url)
    store.migrate()
    yield SweepStore(store)
    store.engine.dispose()


def test_what_a_partial_run_saw_counts_as_seen(sweeps: SweepStore) -> None:
    """A case that timed out after some records (outcome timeout, findings kept) is not a baseline of its own, but
    what it saw was seen: back the next night it persists; gone from a full run, it is fixed."""
    A, T = Outcome.FINDINGS, Outcome.TIMEOUT
    first = _save(sweeps, 1, _case("back", A, LOAD), _case("late", Outcome.CLEAN))
    _save(sweeps, 2, _case("back", T, LOAD), _case("late", T, LATE))
    third = _save(sweeps, 3, _case("back", A, LOAD), _case("late", Outcome.CLEAN))
    assert _parts(sweeps, third) == {"fixed": [("late", first.id)], "persisting": [("back", first.id)]}


def test_a_run_cut_by_the_record_cap_neither_fixes_nor_forgets(sweeps: SweepStore) -> None:
    A = Outcome.FINDINGS
    first = _save(sweeps, 1, _case("c", A, LOAD, STORE))
    second = _save(sweeps, 2, _case("c", A, STORE, truncated=True))  # LOAD may be past the cap
    third = _save(sweeps, 3, _case("c", A, LOAD, STORE))
    found = changes(sweeps, second)
    assert not found.fixed and [i.signature for i in found.unverified] == [LOAD]
    assert "record cap" in found.unverified[0].note
    assert _parts(sweeps, third) == {"persisting": [("c", first.id), ("c", first.id)]}


def test_each_finding_is_flaky_or_not_by_its_own_repeats(sweeps: SweepStore) -> None:
    """A finding seen 3/3 in a case where another was seen 1/3 is new, not flaky; a finding flaky again the next
    night is listed, but is not news (no exit 1, no webhook)."""
    seen = {LOAD: "1/3", STORE: "3/3"}
    first = _save(sweeps, 1, _case("c", Outcome.FINDINGS, LOAD, STORE, seen=seen))
    found = changes(sweeps, first)
    assert [i.signature for i in found.new] == [STORE] and [i.signature for i in found.flaky] == [LOAD]
    second = _save(sweeps, 2, _case("c", Outcome.FINDINGS, LOAD, STORE, seen={LOAD: "2/3", STORE: "3/3"}))
    again = changes(sweeps, second)
    assert [i.signature for i in again.persisting] == [STORE] and [i.again for i in again.flaky] == [True]
    assert not again.changed
    assert notify_payload(again)["text"].count("flaky:") == 0


def test_sweeps_that_started_together_are_ordered_by_id(sweeps: SweepStore) -> None:
    ran = _save(sweeps, 1, _case("c", Outcome.FINDINGS, LOAD), suffix="aa")
    could_not = _save(sweeps, 1, _case("c", Outcome.UNAVAILABLE), suffix="bb")
    later = _save(sweeps, 2, _case("c", Outcome.FINDINGS, LOAD))
    assert sweeps.previous_id(could_not) == ran.id and sweeps.previous_id(ran) is None
    assert _parts(sweeps, later) == {"persisting": [("c", ran.id)]}


def test_an_unknown_version_is_not_a_version_change(sweeps: SweepStore) -> None:
    _save(sweeps, 1, _case("c", Outcome.FINDINGS, LOAD))
    nothing = _save(sweeps, 2, _case("c", Outcome.UNAVAILABLE), _case("added", Outcome.UNAVAILABLE), version=None)
    back = _save(sweeps, 3, _case("c", Outcome.FINDINGS, LOAD), _case("added", Outcome.FINDINGS, LATE))
    assert changes(sweeps, nothing).version_change is None and changes(sweeps, back).version_change is None
    assert [i.note for i in changes(sweeps, back).new] == [""]


def test_a_setup_change_after_a_night_that_could_not_run_is_not_said_twice(sweeps: SweepStore) -> None:
    _save(sweeps, 1, _case("c", Outcome.FINDINGS, LOAD, setup="params {}"))
    assert _parts(sweeps, _save(sweeps, 2, _case("c", Outcome.UNAVAILABLE, setup="params {}"))) == {
        "unverified": [("c", None)]
    }
    third = _save(sweeps, 3, _case("c", Outcome.CLEAN, setup='params {"k": 1}'))
    assert _parts(sweeps, third) == {}


def test_a_sweep_that_is_no_result_has_no_diff(sweeps: SweepStore, tmp_path: Path) -> None:
    _save(sweeps, 1, _case("c", Outcome.FINDINGS, LOAD))
    sweeps.start("f" * 32, "nightly")
    sweeps.fail("f" * 32, "KeyboardInterrupt")
    failed = sweeps.get("f" * 32)
    assert failed is not None
    with pytest.raises(NotAResult, match="is failed, not a result"):
        changes(sweeps, failed)


def test_many_cases_after_a_night_that_ran_none(sweeps: SweepStore) -> None:
    """More cases than one IN list holds (PostgreSQL takes 65,535 parameters; long lists are filtered in Python)."""
    keys = [f"n{i}" for i in range(1200)]
    first = _save(sweeps, 1, *(_case(k, Outcome.FINDINGS, LOAD) for k in keys))
    _save(sweeps, 2, *(_case(k, Outcome.UNAVAILABLE) for k in keys))
    third = _save(sweeps, 3, *(_case(k, Outcome.FINDINGS, LOAD) for k in keys))
    found = changes(sweeps, third)
    assert len(found.persisting) == 1200 and {i.against for i in found.persisting} == {first.id} and not found.new
