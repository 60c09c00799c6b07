"""The nightly sweep over a team's own repository: a git repository made here, ten commits, a test that starts
writing out of bounds under memcheck at a known commit and one commit that does not build. The sweep at the branch
head finds the new finding, and `git bisect run` names the commit, with every commit it tested and what each gave.

The sanitizer is the replay stand-in with the H200's memcheck captures (tests/replay/compute-sanitizer): it runs the
real command probe, and so the repository's real test program; where that program writes past its buffer (it leaves
a file where its GPU twin would have written), the stand-in replays the captured out-of-bounds run, else the captured
clean one. tests/gpu/test_bisect_gpu.py runs the same on a GPU with a real out-of-bounds kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from html import escape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from cuprobe.service.api import create_app
from cuprobe.service.cli.main import app
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.bisect import Bisection, BisectStep, Commit
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.reports.html import html
from cuprobe.service.reports.markdown import markdown
from cuprobe.service.sweep import bisect
from cuprobe.service.sweep.checkout import SourceError
from cuprobe.service.sweep.compare import changes
from cuprobe.service.sweep.culprits import bisect_changes, remove_checkout
from cuprobe.service.sweep.definition import DefinitionError, parse_definition
from cuprobe.service.sweep.diff import DiffItem, SweepDiff
from cuprobe.service.sweep.execute import LocalRunner, run_sweep
from cuprobe.service.sweep.notify import payload
from cuprobe.service.sweep.own_tests import check_out, sweep_tree
from tests.conftest import BOX_ROOT, REPLAY, VERSIONS, capture, replaying
from tests.unit.sweep.test_sweep_webhook import Hook

STEP = [sys.executable, str(Path(__file__).parents[2] / "replay" / "bisect_step.py")]
WITNESS = "wrote-past-the-buffer"

# fill.py at each commit: the buffer's size and how many elements the "kernel" writes; it writes past the end once
# COUNT > SIZE (from commit 7), and leaves WITNESS where the test runs, as the CPU's stand-in for the device write.
FILL = """import os, sys
SIZE = 64
COUNT = {count}
buffer = [0] * SIZE
for i in range(COUNT):
    if i >= SIZE:
        # A service job's sandbox keeps the checkout read-only: there the job's own TMPDIR takes the witness.
        here = os.getcwd() if os.access(os.getcwd(), os.W_OK) else os.environ["TMPDIR"]
        open(os.path.join(here, "{witness}"), "w").write(str(i))
        break
    buffer[i] = i
print("filled", min(COUNT, SIZE)){tail}
"""
BAD_AT = 7
BROKEN_AT = 5  # git's first pick in this range: the bisect must skip it and go on
FIXED_AT = 12


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, number: int, title: str, *, control_fires: bool = True) -> str:
    """Commit `number` of the history; overrun.py, the repository's positive control, writes one element past its
    buffer at every commit (`control_fires`), or stops at the end as if the sanitizer had nothing to see."""
    count = "SIZE + 1" if BAD_AT <= number < FIXED_AT else "SIZE"
    tail = "\nthis line does not parse" if number == BROKEN_AT else ""
    (repo / "fill.py").write_text(FILL.format(count=count, witness=WITNESS, tail=tail))
    overrun = "SIZE + 1" if control_fires else "SIZE"
    (repo / "overrun.py").write_text(FILL.format(count=overrun, witness=WITNESS, tail=""))
    (repo / "NOTES").write_text(f"change {number}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", title)
    return _git(repo, "rev-parse", "HEAD").strip()


def _definition(repo: Path) -> str:
    return f"""
name = "own-nightly"
repeats = 2

[repo]
url = "{repo}"
branch = "main"
build = "{sys.executable} -m py_compile fill.py"

[[test]]
name = "fill"
kind = "command"
tool = "memcheck"
argv = ["{sys.executable}", "fill.py"]

[[test]]
name = "overrun"
kind = "command"
tool = "memcheck"
control = true
expect = "invalid-global-write"
argv = ["{sys.executable}", "overrun.py"]
"""


@pytest.fixture
def team_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "team"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    return repo


Nightly = Callable[[], tuple[Sweep, SweepDiff, list[Bisection]]]


@pytest.fixture
def nightly(team_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Nightly, SweepStore, Settings]:
    """`nightly()`: a sweep of the team's repository at its head (stored, diffed, its changes bisected), as the CLI
    and the scheduled sweep run one; under the replay stand-in with the 2026 sanitizer's memcheck captures."""
    version = VERSIONS[1]
    replaying(monkeypatch, capture(version, "memcheck_ok"), target=True)
    oob = capture(version, "memcheck_oob")
    monkeypatch.setenv("CUPROBE_REPLAY_WHEN", json.dumps({"file": WITNESS, "case": str(oob)}))
    settings = Settings(sanitizer_path=REPLAY, source_roots=[BOX_ROOT], timeout_s=60, data_dir=tmp_path / "data",
                        confirm=False)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    definition = parse_definition(_definition(team_repo))

    def run() -> tuple[Sweep, SweepDiff, list[Bisection]]:
        sweep_id = f"night{len(sweeps.list())}"
        sweeps.start(sweep_id, definition.name)
        checkout = check_out(definition, settings)
        runner = LocalRunner(settings.data_dir / "sweeps" / sweep_id, settings, 1)
        sweep = run_sweep(definition, runner, sweep_id=sweep_id, checkout=checkout)
        sweeps.save(sweep)
        diff = changes(sweeps, sweep)
        found = bisect_changes(sweep, diff, sweeps, definition, checkout, settings, step=STEP)
        remove_checkout(checkout)
        assert not checkout.path.exists()  # the sweep's own worktree goes once its bisects are done
        return sweep, diff, found

    return run, sweeps, settings


def test_the_bisect_names_the_commit_that_brought_the_out_of_bounds_write(
    team_repo: Path, nightly: tuple[Nightly, SweepStore, Settings]
) -> None:
    night, sweeps, settings = nightly
    hashes = [_commit(team_repo, 1, "fill: the first kernel")]
    first, diff, found = night()
    case, control = first.cases
    assert case.key == "fill/memcheck/fill" and case.outcome.value == "clean", case.message
    assert control.key == "overrun/memcheck/overrun" and control.control and control.outcome.value == "findings"
    assert first.source is not None and first.source.commit.hash == hashes[0]
    assert not diff.new and found == []

    titles = {2: "docs", 3: "ci", 4: "notes", 5: "fill: half-written refactor", 6: "fill: finish the refactor",
              7: "fill: one more element", 8: "tune", 9: "notes again", 10: "release"}
    hashes += [_commit(team_repo, n, titles[n]) for n in range(2, 11)]
    second, diff, found = night()
    case, _ = second.cases
    assert case.outcome.value == "findings" and second.source.commit.hash == hashes[-1]
    (new,) = diff.new
    (bisection,) = found
    assert bisection.state == "found", bisection.message
    assert bisection.first is not None and bisection.first.hash == hashes[BAD_AT - 1]
    assert bisection.first.title == "fill: one more element" and "Ada Lovelace" in bisection.first.author
    assert bisection.signature == new.signature and bisection.commits == 9
    by_commit = {step.commit.hash: step for step in bisection.steps}
    # Both ends first (the test alone at the sweep's commit, then at the last sweep's), then git's picks.
    assert [s.commit.hash for s in bisection.steps[:2]] == [hashes[-1], hashes[0]]
    assert {by_commit[h].verdict for h in hashes[BAD_AT - 1:] if h in by_commit} == {"shows"}
    assert {by_commit[h].verdict for h in hashes[:BAD_AT - 1] if h in by_commit and h != hashes[BROKEN_AT - 1]} \
        == {"clean"}
    broken = by_commit[hashes[BROKEN_AT - 1]]  # git asked about the commit that does not build: skipped, not judged
    assert broken.verdict == "skipped" and "py_compile" in broken.reason and broken.outcomes == []
    assert hashes[BAD_AT - 2] in by_commit  # the commit before it was tested and came back clean
    proof = bisection.proof
    assert proof is not None and proof.seen == "2/2" and proof.outcomes == ["findings", "findings"]
    assert len(bisection.steps) <= 7  # 9 commits: both ends, about log2(9) of git's and the skipped one
    stored = sweeps.get(second.id)
    assert stored is not None and stored.source == second.source
    named = f"{hashes[BAD_AT - 1][:12]} fill: one more element (Ada Lovelace <ada@example.com>)"
    text = payload(diff, None, found)["text"]
    assert f"first seen in {named}" in text and proof.runs[0] in text

    kept = second.model_copy(update={"bisections": found})
    assert f"first seen in {named}" in markdown(kept, diff)  # `cuprobe sweep run`'s summary
    assert escape(f"first seen in {named}") in html(kept, diff)  # and its --report page
    sweeps.save(kept)
    again = sweeps.get(second.id)
    assert again is not None and again.bisections == found and again.source == second.source
    page = TestClient(create_app(settings.model_copy(update={"database_url": str(sweeps.store.engine.url)}),
                                 reconciler=False)).get(f"/ui/sweeps/{second.id}")
    assert page.status_code == 200
    section = page.text[page.text.index('<section id="commits">'):]
    assert hashes[BAD_AT - 1] in section and "<b>fill: one more element</b>" in section
    assert "Ada Lovelace &lt;ada@example.com&gt;" in section and proof.runs[0] in section
    assert section.count("<tr><td class=\"mono\">") == len(bisection.steps)  # every commit tested, with its verdict


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('name = "n"\n[[test]]\nname = "t"\nkind = "command"\ntool = "memcheck"\nargv = ["x"]\n',
         r"\[\[test\]\] entries need a \[repo\]"),
        ('name = "n"\n[repo]\nurl = "/r"\n[[entry]]\nprobe = "selftest"\ntool = "none"\n',
         r"\[repo\] is read only with \[\[test\]\] entries"),
        ('name = "n"\n', "at least one \\[\\[entry\\]\\] \\(a probe\\) or \\[\\[test\\]\\]"),
    ],
)
def test_a_definition_whose_tests_have_no_repository_is_refused(text: str, said: str) -> None:
    with pytest.raises(DefinitionError, match=said):
        parse_definition(text)


def test_a_branch_the_repository_does_not_have_is_said_before_anything_runs(team_repo: Path, tmp_path: Path) -> None:
    _commit(team_repo, 1, "first")
    definition = parse_definition(_definition(team_repo).replace('branch = "main"', 'branch = "nightly"'))
    with pytest.raises(SourceError, match="branch 'nightly' is not in the repository"):
        check_out(definition, Settings(data_dir=tmp_path / "data"))


def test_a_head_that_does_not_build_fails_the_sweep_with_the_build_s_words(team_repo: Path, tmp_path: Path) -> None:
    _commit(team_repo, BROKEN_AT, "half-written")
    settings = Settings(data_dir=tmp_path / "data")
    with pytest.raises(SourceError, match=r"(?s)build `.*py_compile fill.py` exited 1:.*SyntaxError"):
        check_out(parse_definition(_definition(team_repo)), settings)
    assert not sweep_tree(settings, "own-nightly").exists()  # no half-made checkout is left behind


def test_a_fixed_finding_gets_the_commit_that_fixed_it(
    team_repo: Path, nightly: tuple[Nightly, SweepStore, Settings]
) -> None:
    night, _, _ = nightly
    for number in range(1, BAD_AT + 1):
        _commit(team_repo, number, f"change {number}")
    night()  # the first sweep, at BAD_AT: the finding is there from the start (nothing to bisect)
    _, diff, _ = night()  # again: it persists
    assert diff.persisting and not diff.new
    hashes = [_commit(team_repo, n, "fill: stop at the end" if n == FIXED_AT else f"change {n}")
              for n in range(BAD_AT + 1, FIXED_AT + 3)]
    _, diff, found = night()
    (fixed,) = diff.fixed
    (bisection,) = found
    assert bisection.direction == "fixed" and bisection.state == "found", bisection.message
    assert bisection.first is not None and bisection.first.hash == hashes[FIXED_AT - BAD_AT - 1]
    assert bisection.first.title == "fill: stop at the end" and bisection.signature == fixed.signature
    steps = {s.commit.hash: s.verdict for s in bisection.steps}
    assert steps[hashes[FIXED_AT - BAD_AT - 2]] == "shows" and steps[hashes[-1]] == "clean"
    assert "fixed by " + hashes[FIXED_AT - BAD_AT - 1][:12] in payload(diff, None, found)["text"]


def test_a_finding_the_test_does_not_show_alone_is_said_not_bisected(
    team_repo: Path, tmp_path: Path, nightly: tuple[Nightly, SweepStore, Settings]
) -> None:
    night, _, _ = nightly
    _commit(team_repo, 1, "first")
    night()
    # From here the program writes past its buffer only in its first two runs on this machine (a count kept outside
    # the repository): the sweep's two repeats see it, the test run alone afterwards does not.
    runs = tmp_path / "runs-so-far"
    counted = f"int(open({str(runs)!r}).read()) if os.path.exists({str(runs)!r}) else 0"
    (team_repo / "fill.py").write_text(
        f"import os\nBEFORE = {counted}\nopen({str(runs)!r}, 'w').write(str(BEFORE + 1))\n"
        + FILL.format(count="SIZE + (1 if BEFORE < 2 else 0)", witness=WITNESS, tail="")
    )
    _git(team_repo, "commit", "-qam", "fill: remember the first run")
    _, diff, found = night()
    assert diff.new
    (bisection,) = found
    assert bisection.state == "not-reproduced" and bisection.first is None
    assert "seen in the sweep's run, but not when its test runs alone at" in bisection.message
    assert [s.verdict for s in bisection.steps] == ["clean"]  # the sweep's commit alone; nothing else was run
    assert "no commit named: seen in the sweep's run, but not" in payload(diff, None, found)["text"]


def _cli(team_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Callable[[], Result]:
    """`cuprobe sweep run` of the team's nightly definition, under the replay stand-in, as a user runs it."""
    replaying(monkeypatch, capture(VERSIONS[1], "memcheck_ok"), target=True)
    oob = capture(VERSIONS[1], "memcheck_oob")
    monkeypatch.setenv("CUPROBE_REPLAY_WHEN", json.dumps({"file": WITNESS, "case": str(oob)}))
    monkeypatch.setattr(bisect, "STEP", STEP)  # the step's process sees the replay's GPU, as this one does
    definition = tmp_path / "nightly.toml"
    definition.write_text(_definition(team_repo))
    env = {
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_SANITIZER_PATH": str(REPLAY),
        "CUPROBE_SOURCE_ROOTS": json.dumps([BOX_ROOT]),
        "CUPROBE_CONFIRM": "0",
        "COLUMNS": "200",
        **env,
    }
    return lambda: CliRunner().invoke(app, ["sweep", "run", str(definition), "--slots", "1"], env=env)


def test_cuprobe_sweep_run_bisects_and_the_webhook_names_the_commit(
    team_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = Hook()
    sweep = _cli(team_repo, tmp_path, monkeypatch, CUPROBE_SWEEP_WEBHOOK_URL=hook.url)

    _commit(team_repo, 1, "first")
    first = sweep()
    assert first.exit_code == 0, first.output
    hashes = [_commit(team_repo, n, "fill: one more element" if n == BAD_AT else f"change {n}") for n in range(2, 11)]
    second = sweep()
    assert second.exit_code == 1, second.output  # a new finding
    culprit = f"first seen in {hashes[BAD_AT - 2][:12]} fill: one more element (Ada Lovelace <ada@example.com>)"
    assert "## Commits" in second.stdout and culprit in second.stdout
    (body,) = hook.bodies
    assert culprit in body["text"]
    (bisection,) = body["bisections"]
    assert bisection["first"]["hash"] == hashes[BAD_AT - 2] and bisection["state"] == "found"
    assert [p.name for p in (tmp_path / "data" / "repos" / "worktrees").iterdir()] == []  # every worktree removed
    hook.server.shutdown()


def test_the_notification_links_the_job_that_proved_the_commit() -> None:
    """A scheduled sweep's bisect steps are jobs: the webhook's line links the proving job's dashboard page."""
    first = Commit(hash="a" * 40, author="Ada Lovelace <ada@example.com>", title="fill: one more element")
    proof = BisectStep(commit=first, verdict="shows", seen="2/2", outcomes=["findings"] * 2, runs=["job:j1", "job:j2"])
    bisection = Bisection(direction="new", case="fill/memcheck/fill", signature="memcheck|x", tool="memcheck",
                          good="b" * 40, bad="c" * 40, state="found", message="", first=first, steps=[proof])
    diff = SweepDiff(sweep="s2", previous="s1", definition="own-nightly",
                     new=[DiffItem(case="fill/memcheck/fill", signature="memcheck|x", count=1, seen="2/2")])
    text = payload(diff, None, [bisection], "https://cuprobe.example/")["text"]
    assert (
        "- new: fill/memcheck/fill memcheck|x (1)\n  first seen in aaaaaaaaaaaa fill: one more element "
        "(Ada Lovelace <ada@example.com>) (1 step(s)); proved by https://cuprobe.example/ui/jobs/j1"
    ) in text


def test_a_definition_whose_tests_have_no_positive_control_is_refused(team_repo: Path) -> None:
    """As the gate refuses such a suite: a sanitizer that sees nothing would make every night read clean."""
    text = _definition(team_repo)
    uncontrolled = text.replace("control = true\nexpect = \"invalid-global-write\"\n", "")
    with pytest.raises(
        DefinitionError,
        match=r"no positive control for memcheck among the \[\[test\]\] entries: a broken sanitizer tool would "
        r"read as clean; for memcheck add a \[\[test\]\] that runs a test with a known defect",
    ):
        parse_definition(uncontrolled)
    with pytest.raises(DefinitionError, match="no positive control for memcheck"):
        parse_definition(text[: text.index("[[test]]\nname = \"overrun\"")])


def test_a_control_that_comes_back_clean_fails_the_sweep(
    team_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = _cli(team_repo, tmp_path, monkeypatch)
    _commit(team_repo, 1, "first")
    assert sweep().exit_code == 0
    _commit(team_repo, 2, "overrun: stop at the end", control_fires=False)  # the instrument sees nothing now
    second = sweep()
    assert second.exit_code == 3, second.output  # could not run, never clean
    said = "positive control came back clean: expected memcheck invalid-global-write, got nothing"
    could_not = second.stdout[second.stdout.index("## Could not run"):]
    assert said in could_not and "`overrun/memcheck/overrun`" in could_not
    store = Store(Settings(data_dir=tmp_path / "data").database)
    kept = SweepStore(store).get(SweepStore(store).list()[0].id)  # the latest
    assert kept is not None and kept.source is not None and kept.source.commit.title == "overrun: stop at the end"
    control = next(c for c in kept.cases if c.control)
    assert not control.outcome.ran and said in control.message


def test_a_control_s_finding_is_not_called_new_nor_bisected(
    team_repo: Path, nightly: tuple[Nightly, SweepStore, Settings]
) -> None:
    night, _, _ = nightly
    _commit(team_repo, 1, "first", control_fires=False)
    first, _, _ = night()  # the control did not fire: the sweep could not run, and its finding was never seen
    assert [c.outcome.ran for c in first.cases] == [True, False]
    hashes = [_commit(team_repo, n, "fill: one more element" if n == BAD_AT else f"change {n}") for n in range(2, 9)]
    second, diff, found = night()  # the control fires again, and fill writes past its buffer since BAD_AT
    assert [c.outcome.value for c in second.cases] == ["findings", "findings"]
    assert [item.case for item in diff.new] == ["fill/memcheck/fill"]  # the control's planted write is not new
    (bisection,) = found
    assert bisection.case == "fill/memcheck/fill" and bisection.state == "found", bisection.message
    assert bisection.first is not None and bisection.first.hash == hashes[BAD_AT - 2]
