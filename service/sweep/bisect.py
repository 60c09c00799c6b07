"""Name the commit that brought (or fixed) one finding: `git bisect run` in a worktree of cuprobe's own, each step
running only the test that showed it, under the same tool, with the sweep's repeats (service/sweep/bisect_step.py).

Both ends are tested first: the sweep's commit with the test alone (a finding seen in the sweep that the test alone
does not show is said, not bisected), and the last sweep's commit (where the test alone already shows it, the range
holds no change to blame). Only then does git pick the commits between.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.models.bisect import Bisection, BisectStep, Commit
from cuprobe.service.sweep.bisect_step import ABORT, FROM_ENVIRONMENT, StepSpec
from cuprobe.service.sweep.checkout import SourceError, add_worktree, commits_after, git, is_ancestor, remove_worktree
from cuprobe.service.sweep.definition import RepoSource

# git's words for a commit's two states, per direction: (old, new); the first `new` commit is the one named.
TERMS = {"new": ("clean", "shows"), "fixed": ("shows", "gone")}
FIRST = re.compile(r"^([0-9a-f]{40}) is the first (\w+) commit", re.MULTILINE)
ANY_OF = re.compile(r"could be any of:\n((?:[0-9a-f]{40}\n)+)")


@dataclass(frozen=True)
class Target:
    """One finding of one case to bisect: the request that ran the case's test, and where its checkout was."""

    direction: Literal["new", "fixed"]
    case: str
    signature: str
    request: ProbeRequest
    root: Path  # the checkout the request's paths point into; the bisect's worktree takes its place
    repeats: int


def relocated(value: Any, old: str, new: str) -> Any:
    """`value` with every path inside `old` (a string equal to it or below it) moved to `new`."""
    if isinstance(value, str):
        return new + value[len(old) :] if value == old or value.startswith(old.rstrip("/") + "/") else value
    if isinstance(value, list):
        return [relocated(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: relocated(v, old, new) for k, v in value.items()}
    return value


def _settings_for_steps(settings: Settings) -> dict[str, Any]:
    return settings.model_dump(mode="json", exclude=FROM_ENVIRONMENT | {"command_probe_enabled"}, exclude_none=True)


# The program `git bisect run` runs at each commit; it is given the step's spec file.
STEP = [sys.executable, "-m", "cuprobe.service.sweep.bisect_step"]


class Bisector:
    """Runs a bisect of one repository's mirror in a worktree under `place`. `mode`: where the steps' runs go (local:
    this machine's sanitizer; service: jobs on the GPU workers); `step`: the step program (STEP)."""

    def __init__(
        self,
        mirror: Path,
        repo: RepoSource,
        settings: Settings,
        place: Path,
        mode: str = "local",
        step: list[str] | None = None,
    ) -> None:
        self.mirror, self.repo, self.settings, self.place, self.mode = mirror, repo, settings, place, mode
        self.step = step or STEP

    def run(self, target: Target, good: str, bad: str, runs: Path) -> Bisection:
        """Bisect `target` over (good, bad]; `runs`: where the steps' local runs keep their files."""
        started = time.monotonic()
        base = Bisection(
            direction=target.direction,
            case=target.case,
            signature=target.signature,
            tool=str(target.request.tool),
            good=good,
            bad=bad,
            state="failed",
            message="",
        )
        try:
            out = self._run(target, base, runs)
        except SourceError as exc:
            out = base.model_copy(update={"state": "failed", "message": str(exc)})
        return out.model_copy(update={"wall_s": round(time.monotonic() - started, 3)})

    def _run(self, target: Target, base: Bisection, work: Path) -> Bisection:
        good, bad = base.good, base.bad
        if good == bad or not is_ancestor(self.mirror, good, bad):
            why = "no commits since" if good == bad else "is not an ancestor of"
            said = f"the last sweep's commit {good[:12]} {why} this sweep's {bad[:12]}: no range to bisect"
            return base.model_copy(update={"state": "no-range", "message": said})
        commits = len(commits_after(self.mirror, good, bad))
        tree = target.root  # the sweep's own checkout path: its findings' paths are the same in every step
        work.mkdir(parents=True, exist_ok=True)
        self.place.mkdir(parents=True, exist_ok=True)
        evidence = self.place / "evidence.jsonl"
        evidence.unlink(missing_ok=True)
        spec = StepSpec(
            request=relocated(target.request.model_dump(mode="json"), str(target.root), str(tree)),
            signature=target.signature,
            repeats=target.repeats,
            build=self.repo.build,
            build_timeout_s=self.repo.build_timeout_s,
            direction=target.direction,
            evidence=evidence,
            workdir=work,
            mode="service" if self.mode == "service" else "local",
            settings=_settings_for_steps(self.settings),
        )
        spec_file = self.place / "step.json"
        spec_file.write_text(spec.model_dump_json(indent=1))
        step_argv = [*self.step, str(spec_file)]
        add_worktree(self.mirror, tree, bad)
        try:
            return self._bisect(base.model_copy(update={"commits": commits}), tree, step_argv, evidence)
        finally:
            with contextlib.suppress(SourceError):  # a bisect never started has nothing to reset
                git("bisect", "reset", "--quiet", cwd=tree)
            remove_worktree(self.mirror, tree)

    def _bisect(self, base: Bisection, tree: Path, step_argv: list[str], evidence: Path) -> Bisection:
        old, new = TERMS[base.direction]
        named = "first seen in" if base.direction == "new" else "fixed by"

        def end(commit: str) -> BisectStep | None:
            git("checkout", "--quiet", "--detach", commit, cwd=tree)
            before = len(_steps(evidence))
            done = subprocess.run(step_argv, cwd=tree, capture_output=True, text=True)
            if done.returncode == ABORT:
                raise SourceError(f"the bisect step broke at {commit[:12]}: {done.stderr.strip()[-1500:]}")
            after = _steps(evidence)
            return after[-1] if len(after) > before else None

        mark = {"new": ("shows", "clean"), "fixed": ("clean", "shows")}[base.direction]
        at_bad = end(base.bad)  # first: a finding its test alone does not show costs no more steps
        if at_bad is None or at_bad.verdict != mark[0]:
            steps = _steps(evidence)
            if at_bad is None or at_bad.verdict == "skipped":
                why = at_bad.reason if at_bad is not None else "the step wrote no evidence"
                said = f"its test could not run alone at {base.bad[:12]}: {why}"
                return base.model_copy(update={"state": "failed", "message": said, "steps": steps})
            said = (
                f"seen in the sweep's run, but not when its test runs alone at {base.bad[:12]} ({at_bad.seen})"
                if base.direction == "new"
                else f"still seen when its test runs alone at {base.bad[:12]} ({at_bad.seen}): not fixed"
            )
            return base.model_copy(update={"state": "not-reproduced", "message": said, "steps": steps})
        at_good = end(base.good)
        if at_good is None or at_good.verdict != mark[1]:
            steps = _steps(evidence)
            if at_good is None or at_good.verdict == "skipped":
                why = at_good.reason if at_good is not None else "the step wrote no evidence"
                said = f"its test could not run at the last sweep's commit {base.good[:12]}: {why}"
                return base.model_copy(update={"state": "failed", "message": said, "steps": steps})
            said = (
                f"its test alone shows it at the last sweep's commit {base.good[:12]} too ({at_good.seen}): "
                "the commits since did not bring it"
                if base.direction == "new"
                else f"its test alone no longer shows it at the last sweep's commit {base.good[:12]}"
            )
            return base.model_copy(update={"state": "already-there", "message": said, "steps": steps})
        git("checkout", "--quiet", "--detach", base.bad, cwd=tree)
        git("bisect", "start", f"--term-old={old}", f"--term-new={new}", base.bad, base.good, cwd=tree)
        done = subprocess.run(["git", "bisect", "run", *step_argv], cwd=tree, capture_output=True, text=True)
        steps = _steps(evidence)
        output = done.stdout + done.stderr
        if found := FIRST.search(output):
            first = next((s.commit for s in steps if s.commit.hash == found.group(1)), None)
            first = first or Commit(hash=found.group(1))
            said = f"{named} {first.line()} after {len(steps)} step(s)"
            return base.model_copy(update={"state": "found", "first": first, "message": said, "steps": steps})
        if candidates := ANY_OF.search(output):
            hashes = candidates.group(1).split()
            known = {s.commit.hash: s.commit for s in steps}
            listed = [known.get(h) or Commit(hash=h) for h in hashes]
            said = f"commits that could not be tested leave {len(listed)} candidates: " + ", ".join(
                c.short for c in listed
            )
            return base.model_copy(update={"state": "ambiguous", "candidates": listed, "message": said, "steps": steps})
        said = f"git bisect run ended without a commit (exit {done.returncode}): {output.strip()[-1500:]}"
        return base.model_copy(update={"state": "failed", "message": said, "steps": steps})


def _steps(evidence: Path) -> list[BisectStep]:
    if not evidence.exists():
        return []
    return [BisectStep.model_validate_json(line) for line in evidence.read_text().splitlines() if line.strip()]
