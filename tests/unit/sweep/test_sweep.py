"""Sweeps on real H200 captures (replayed): per-case attribution, stored diffs, flaky repeats, reports, beat."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.probes.narrow_matmul import NarrowMatmul, NarrowMatmulParams, case_id, expected_uninit_reads
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store, utcnow
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import Outcome, RunResult
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.probing import runner
from cuprobe.service.probing.confirm import SharedReruns
from cuprobe.service.queue.celery_app import TASK_RUN_SWEEP, make_celery
from cuprobe.service.reports.html import html
from cuprobe.service.reports.markdown import markdown
from cuprobe.service.sanitizer import forked, pool
from cuprobe.service.sanitizer.locate import _version
from cuprobe.service.sweep.definition import DefinitionError, load_definition, parse_definition
from cuprobe.service.sweep.diff import diff
from cuprobe.service.sweep.execute import LocalRunner, assemble, requests_of, run_sweep
from cuprobe.service.sweep.plan import BATCHING, NEED_RECORDS, plan
from tests.conftest import capture

NS = [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128]
CAPTURED = f"""
name = "captured"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = {{m = 32, k = 32, tile = 32}}
grid = {{n = {NS}, variants = ["unguarded", "guarded", "torch"]}}
"""


@pytest.fixture
def on_h200(monkeypatch: pytest.MonkeyPatch) -> None:
    """This CPU machine has no GPU; the replayed runs came from one (the only mock here)."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: ("NVIDIA H200", "580.159.04", "13.0"))


def replayed_sweep(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version: str, **settings: object) -> Sweep:
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "probe_narrow-matmul_initcheck")))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    _version.cache_clear()  # one stand-in binary answers with each capture's version
    s = Settings(sanitizer_path=Path("tests/replay/compute-sanitizer"), source_roots=["/work/main"], **settings)
    return run_sweep(parse_definition(CAPTURED), LocalRunner(tmp_path / version, s))


@pytest.mark.parametrize("version", ["2025.3.1.0", "2026.4.0.0"])
def test_batched_findings_are_attributed_to_their_cases(
    on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version: str
) -> None:
    sweep = replayed_sweep(monkeypatch, tmp_path, version)
    assert len(sweep.processes) == 1 and sweep.processes[0].batched and sweep.processes[0].control_fired == [True]
    assert sweep.sanitizer_version == version and len(sweep.cases) == 39
    for case in sweep.cases:
        want = expected_uninit_reads(32, 32, case.point["n"], 32, case.point["variants"])
        assert case.records == want, case.key
        assert case.setup == 'params {"k": 32, "m": 32, "tile": 32}'  # its entry's fixed params, for the diff
        assert case.outcome is (Outcome.FINDINGS if want else Outcome.CLEAN)
    assert sum(c.records for c in sweep.cases) == 6624


def test_a_record_cap_never_reads_as_clean(on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sweep = replayed_sweep(monkeypatch, tmp_path, "2026.4.0.0", sweep_max_records=3000)
    assert sweep.processes[0].truncated
    assert not any(c.outcome is Outcome.CLEAN for c in sweep.cases)
    # Cases before the cap are judged (their records were all kept); later ones are "not counted, not clean".
    judged = [c for c in sweep.cases if not c.truncated]
    assert judged and all(c.outcome is Outcome.FINDINGS for c in judged)
    assert all(c.outcome is Outcome.FINDINGS or "record cap" in c.message for c in sweep.cases if c.truncated)


def test_diffs_over_stored_sweeps(on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    old = replayed_sweep(monkeypatch, tmp_path, "2025.3.1.0")
    sweeps.save(old)
    new = replayed_sweep(monkeypatch, tmp_path, "2026.4.0.0")
    sweeps.save(new)
    loaded = sweeps.get(new.id)
    assert loaded is not None and loaded.model_dump() == new.model_dump()
    same = diff(loaded, sweeps.previous(loaded))
    assert same.previous == old.id and same.version_change == "sanitizer 2025.3.1.0 -> 2026.4.0.0"
    assert len(same.persisting) == 10 and not same.new and not same.fixed and not same.changed

    # A third sweep: unguarded-n2 no longer reads padding, guarded-n2 now does, torch-n1 could not run.
    third = new.model_copy(deep=True, update={"id": "third", "started_at": new.started_at.replace(year=2099)})
    cases = {c.key: c for c in third.cases}
    moved = cases["narrow-matmul/initcheck/unguarded-n2"].findings.pop()
    cases["narrow-matmul/initcheck/unguarded-n2"].outcome = Outcome.CLEAN
    cases["narrow-matmul/initcheck/guarded-n2"].findings.append(moved.model_copy(update={"case": "guarded-n2"}))
    cases["narrow-matmul/initcheck/unguarded-n1"].outcome = Outcome.TIMEOUT
    cases["narrow-matmul/initcheck/unguarded-n1"].findings.clear()
    sweeps.save(third)
    changes = diff(third, sweeps.previous(third))
    assert changes.previous == new.id and changes.version_change is None
    assert [i.case for i in changes.new] == ["narrow-matmul/initcheck/guarded-n2"]
    assert [i.case for i in changes.fixed] == ["narrow-matmul/initcheck/unguarded-n2"]
    assert [i.case for i in changes.unverified] == ["narrow-matmul/initcheck/unguarded-n1"]
    assert len(changes.persisting) == 8 and changes.changed


def test_repeats_that_disagree_are_flaky(on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = replayed_sweep(monkeypatch, tmp_path, "2026.4.0.0")
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture("2026.4.0.0", "probe_narrow-matmul_initcheck")))
    processes = plan(parse_definition(CAPTURED))
    s = Settings(sanitizer_path=Path("tests/replay/compute-sanitizer"), source_roots=["/work/main"])
    real = runner.run_probe(
        runner.ProbeRequest(probe="narrow-matmul", tool=processes[0].tool, params=processes[0].params),
        workdir=tmp_path / "r",
        settings=s,
    )
    # The second repeat lost the n=2 finding (as a flaky defect would): everything else agrees.
    second = real.model_copy(update={"findings": [f for f in real.findings if f.case != "unguarded-n2"]})
    sweep = assemble("captured", processes, {0: [real, second]}, "flaky", first.started_at, 1.0)
    cases = {c.key: c for c in sweep.cases}
    n2, n1 = cases["narrow-matmul/initcheck/unguarded-n2"], cases["narrow-matmul/initcheck/unguarded-n1"]
    assert n2.flaky and n2.findings[0].seen == "1/2" and n2.findings[0].evidence == "reproduced"
    assert not n1.flaky and n1.findings[0].seen == "2/2" and n1.findings[0].evidence == "proven"
    changes = diff(sweep, first)
    assert [i.case for i in changes.flaky] == ["narrow-matmul/initcheck/unguarded-n2"]
    # The next night neither repeat sees it: a finding seen 1/2 before is not fixed by 0/2 (it was called fixed).
    calm = assemble("captured", processes, {0: [second, second]}, "calm", first.started_at, 1.0)
    after = diff(calm, sweep)
    assert after.fixed == [] and [(i.case, i.count, i.again) for i in after.flaky] == [
        ("narrow-matmul/initcheck/unguarded-n2", 0, True)
    ]
    assert "flaky before (seen 1/2): its absence is not a fix" in after.flaky[0].note and not after.changed


def test_reports_render_plots_and_counts(on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sweep = replayed_sweep(monkeypatch, tmp_path, "2026.4.0.0")
    page = html(sweep, diff(sweep, None))
    assert page.count("<svg") == 1 and "unguarded-n33" in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert all(f"initcheck {v}" in svg for v in ("unguarded", "guarded", "torch"))
    summary = markdown(sweep, diff(sweep, None))
    assert "| findings | 10 |" in summary and "| clean | 29 |" in summary


def test_nightly_plans_batches_with_controls_and_says_why_not() -> None:
    processes = plan(load_definition(Path("suites/nightly.toml")))
    narrow = [p for p in processes if p.probe == "narrow-matmul" and p.tool == "initcheck"]
    assert sum(len(p.cases) for p in narrow) == 384 and all(p.batched and p.control for p in narrow)
    singles = [p for p in processes if not p.batched]
    assert all(p.reason for p in singles)
    memcheck = [p for p in singles if p.probe == "narrow-matmul"]
    assert len(memcheck) == 27 and all("no positive control under memcheck" in p.reason for p in memcheck)


def test_a_batch_without_a_control_case_gets_one() -> None:
    text = CAPTURED.replace('["unguarded", "guarded", "torch"]', '["guarded"]')
    (only,) = plan(parse_definition(text))
    assert only.control == "unguarded-n1" and "unguarded" in only.params["variants"]
    # The control is one case more, not the unguarded kernel at every n of the batch.
    assert only.params["cases"] == ["guarded-n" + str(n) for n in NS] + ["unguarded-n1"]
    assert [c.key for c in only.cases if c.added] == ["narrow-matmul/initcheck/control-unguarded-n1@0"]


def test_bad_definitions_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"entry\.0: .*matmul-throughput does not run under initcheck"):
        parse_definition('name = "x"\n[[entry]]\nprobe = "matmul-throughput"\ntool = ["initcheck"]\n')
    with pytest.raises(DefinitionError, match="unknown probe"):
        parse_definition('name = "x"\n[[entry]]\nprobe = "nope"\ntool = ["none"]\n')
    with pytest.raises(DefinitionError, match="cannot read"):
        load_definition(tmp_path / "missing.toml")


def test_the_beat_entry_comes_from_settings() -> None:
    app = make_celery(Settings(sweep_schedule="0 2 * * *"))
    (entry,) = [v for k, v in app.conf.beat_schedule.items() if k.startswith("sweep:")]
    assert entry["task"] == TASK_RUN_SWEEP and entry["args"] == ["suites/nightly.toml"]
    assert entry["schedule"].hour == {2} and entry["schedule"].minute == {0}
    assert not [k for k in make_celery(Settings()).conf.beat_schedule if k.startswith("sweep:")]
    with pytest.raises(ValueError, match="5 fields"):
        make_celery(Settings(sweep_schedule="nightly"))


def test_a_stalled_batch_is_run_again_and_the_report_counts_it(
    on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plain = replayed_sweep(monkeypatch, tmp_path / "plain", "2026.4.0.0")
    monkeypatch.setenv("CUPROBE_REPLAY_STALL_ONCE", str(tmp_path))  # the first sanitizer process hangs
    stalled = replayed_sweep(monkeypatch, tmp_path / "stalled", "2026.4.0.0", stall_s=2.0)
    assert (tmp_path / "stalled-once").exists()
    (process,) = stalled.processes
    assert process.stalls == [1] and process.outcomes == [Outcome.FINDINGS]
    assert "stalled after" in process.messages[0]
    seen = [[(c.key, c.outcome, c.records) for c in sweep.cases] for sweep in (stalled, plain)]
    assert seen[0] == seen[1]
    assert "<th>stalled attempts</th>" in html(stalled, None)


def test_a_result_without_its_control_is_could_not_run(on_h200: None, tmp_path: Path) -> None:
    (process,) = plan(parse_definition(CAPTURED))
    broken = RunResult(probe="narrow-matmul", tool=process.tool, outcome=Outcome.CLEAN, message="0 errors")
    sweep = assemble("captured", [process], {0: [broken]}, "x", utcnow(), 1.0)
    assert all(c.outcome is Outcome.SANITIZER_ERROR and "did not fire" in c.message for c in sweep.cases)


def test_initcheck_processes_skip_host_backtraces_and_others_keep_them() -> None:
    from cuprobe.service.sweep.execute import requests_of

    requests = [r for _, r in requests_of(plan(load_definition(Path("suites/nightly.toml"))))]
    by_tool = {(r.tool, r.show_backtrace) for r in requests}
    assert ("initcheck", "device") in by_tool and ("memcheck", None) in by_tool
    assert not any(r.tool == "initcheck" and r.show_backtrace != "device" for r in requests)


GRID48 = """
name = "grid48"
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = { m = 32, k = 32, tile = 32 }
grid = { n = { first = 1, last = 16 }, variants = ["unguarded", "guarded", "torch"] }
"""


@pytest.mark.parametrize("slots", [1, 2, 4, 8, 16, 32])
def test_batches_spread_over_the_gpu_slots_each_with_a_control(slots: int) -> None:
    processes = plan(parse_definition(GRID48), slots)
    assert len(processes) == slots  # 48 cases: one process per slot
    grid = [c.key for p in processes for c in p.cases if not c.added]
    assert len(grid) == len(set(grid)) == 48
    assert all(p.batched and p.control and any(c.control for c in p.cases) for p in processes)
    # Each process's parameters run exactly its cases (its added control among them), nothing more.
    for p in processes:
        ran = [case_id(v, n) for v, n in NarrowMatmulParams.model_validate(p.params).selected()]
        assert sorted(ran) == sorted(c.probe_case for c in p.cases)


@pytest.mark.parametrize("slots", [2, 4, 8, 16])
def test_batches_carry_even_costs_and_only_the_fewest_import_torch(slots: int) -> None:
    """K processes at once end when the costliest does. Along n the unguarded kernel's records fall from 992 (n = 1)
    to 0 (n = 32) and again in every tile, so consecutive chunks of the nightly grid at K = 8 carried 12,032 and 3,840
    records: cases are spread so every process costs
    about the same. A process whose cases use torch pays its import once (NEED_RECORDS): the torch variant's 128
    cases go to as few processes as keep the costs even, and every other process never imports torch."""
    definition = load_definition(Path("suites/nightly.toml"))
    processes = [p for p in plan(definition, slots) if p.batched]
    assert len(processes) == slots
    grid = [c.key for p in processes for c in p.cases if not c.added]
    assert len(grid) == len(set(grid)) == 384 and all(any(c.control for c in p.cases) for p in processes)
    (entry,) = [e for e in definition.entries if e.name == processes[0].cases[0].entry]
    batching = BATCHING["narrow-matmul"]
    records = [sum(batching.records(entry.params, c.point) for c in p.cases if not c.added) for p in processes]
    assert sum(records) == 63_488
    probe = NarrowMatmul()
    uses_torch = [probe.uses_torch(NarrowMatmulParams.model_validate(p.params)) for p in processes]
    costs = [
        sum(batching.cost(entry.params, c.point) for c in p.cases if not c.added) + NEED_RECORDS["torch"] * torch
        for p, torch in zip(processes, uses_torch, strict=True)
    ]
    assert max(costs) <= 1.01 * min(costs), costs
    assert sum(uses_torch) == (2 if slots == 16 else 1), uses_torch  # at K = 16 one process would cost too much
    # Each process keeps the grid's order and runs exactly its cases.
    for p in processes:
        assert p.params["n"] == sorted(p.params["n"])
        ran = [case_id(v, n) for v, n in NarrowMatmulParams.model_validate(p.params).selected()]
        assert sorted(ran) == sorted(c.probe_case for c in p.cases)


def test_local_runner_with_slots_returns_every_result_to_its_request(tmp_path: Path) -> None:
    from cuprobe.service.probing.runner import ProbeRequest

    requests = [ProbeRequest(probe="selftest", params={"behaviour": "ok", "seconds": 0.1 * i}) for i in range(5)]
    got = dict(LocalRunner(tmp_path, slots=3).run_all(requests))
    assert sorted(got) == list(range(5))
    assert all(r.outcome.value == "clean" for r in got.values())
    assert [got[i].params["seconds"] for i in range(5)] == [0.1 * i for i in range(5)]


def test_slots_in_one_process_parse_their_xml_in_child_processes(
    on_h200: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A local sweep's K slots are threads of one process; past one slot, each run's XML is parsed in child
    processes (their parses would otherwise take turns on this process's interpreter lock) with the same findings,
    forked from one server that imported the parser, and none left running after it."""
    from cuprobe.service.probing.runner import ProbeRequest

    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture("2026.4.0.0", "probe_narrow-matmul_initcheck")))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    _version.cache_clear()
    settings = Settings(  # no confirmation: its bare re-runs need a GPU, and parse nothing
        sanitizer_path=Path("tests/replay/compute-sanitizer"), source_roots=["/work/main"], confirm=False
    )
    params = {"m": 32, "k": 32, "tile": 32, "n": NS, "variants": ["unguarded", "guarded", "torch"]}
    requests = [ProbeRequest(probe="narrow-matmul", tool="initcheck", params=params)] * 2
    one = dict(LocalRunner(tmp_path / "one", settings, slots=1).run_all(requests))

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("a slot parsed its XML in the sweep's own process")

    made: list[pool.ChildParser] = []
    child = forked.ParserServer.child

    def recorded(server: forked.ParserServer, ctx: forked.Context) -> pool.ChildParser:
        made.append(child(server, ctx))
        return made[-1]

    monkeypatch.setattr(forked.ParserServer, "child", recorded)
    monkeypatch.setattr(pool, "parse_chunk", not_here)
    two = dict(LocalRunner(tmp_path / "two", settings, slots=2).run_all(requests))
    assert sorted(two) == [0, 1]
    # both runs parsed in children forked from the sweep's parser server, and none is left running
    assert len(made) == 2 and all(isinstance(c, forked.ForkedParser) and not c.running for c in made)
    for slot in (0, 1):
        assert two[slot].outcome == one[slot].outcome == Outcome.FINDINGS, two[slot].message
        assert two[slot].records == one[slot].records == 6624
        assert [f.model_dump() for f in two[slot].findings] == [f.model_dump() for f in one[slot].findings]
    with pytest.raises(AssertionError, match="own process"):  # the control: one slot parses where it runs
        dict(LocalRunner(tmp_path / "again", settings, slots=1).run_all(requests[:1]))
    with pytest.raises(AssertionError, match="own process"):  # bench/sweep.py's comparison parses here
        dict(LocalRunner(tmp_path / "here", settings, slots=2, parse_in_children=False).run_all(requests))


@pytest.mark.parametrize("slots", [2, 8])
def test_the_nightly_grids_batches_share_one_confirmation_of_every_case(slots: int, tmp_path: Path) -> None:
    """The batches of the nightly narrow-matmul grid under initcheck share one set of bare re-runs over all 384 of
    its cases; memcheck's processes and the single uninit-read process confirm nothing or keep their own."""
    requests = [r for _, r in requests_of(plan(load_definition(Path("suites/nightly.toml")), slots))]
    shared = SharedReruns(requests, Settings(), tmp_path)
    grid = [i for i, r in enumerate(requests) if r.probe == "narrow-matmul" and r.tool == "initcheck"]
    assert len(grid) == slots
    merged = [shared.merged_params(i) for i in grid]
    assert all(m == merged[0] for m in merged) and merged[0] is not None
    # Every case of the grid but the torch variant's: a flagged torch case is re-run after its batch's run.
    assert sorted(merged[0]["n"]) == list(range(1, 129)) and merged[0]["variants"] == ["unguarded", "guarded"]
    others = [i for i in range(len(requests)) if i not in grid]
    assert others and all(shared.merged_params(i) is None for i in others)
    assert all(SharedReruns(requests, Settings(confirm=False), tmp_path).merged_params(i) is None for i in grid)
