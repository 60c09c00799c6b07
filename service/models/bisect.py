"""What a sweep of a team's own repository records: the commit it ran, and the commit that brought or fixed each
finding, with the evidence (every commit the bisect tested and what each gave)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Commit(BaseModel):
    """One commit as a person reads it: hash, author and title."""

    hash: str
    author: str = ""
    title: str = ""

    @property
    def short(self) -> str:
        return self.hash[:12]

    def line(self) -> str:
        """`abcdef123456 title (author)`: how reports and notifications name a commit."""
        return f"{self.short} {self.title} ({self.author})".strip()


class SweepSource(BaseModel):
    """The repository, branch and commit a sweep's [[test]] entries ran against."""

    url: str
    branch: str
    commit: Commit


# What one bisect step found at its commit: the finding seen in some repeat, in none, or the commit could not be
# tested (did not build, or its test could not run) and was skipped (`git bisect run`'s exit 125).
StepVerdict = Literal["shows", "clean", "skipped"]


class BisectStep(BaseModel):
    """One commit the bisect tested: what each repeat of the test gave there."""

    commit: Commit
    verdict: StepVerdict
    seen: str = Field("", description="k/n: repeats that showed the finding, of those that ran")
    outcomes: list[str] = Field(default_factory=list, description="one per repeat")
    reason: str = Field("", description="why a commit was skipped, or what the runs said")
    wall_s: float = 0.0
    gpu_s: float = Field(0.0, description="the sanitizer runs' own seconds (the GPU held by this step)")
    runs: list[str] = Field(default_factory=list, description="where each repeat's run is kept: a job id or a folder")


BisectState = Literal["found", "not-reproduced", "already-there", "ambiguous", "no-range", "failed"]


class Bisection(BaseModel):
    """The commit that brought (`new`) or fixed (`fixed`) one finding of one case, found by `git bisect run`."""

    direction: Literal["new", "fixed"]
    case: str
    signature: str
    tool: str
    good: str = Field(description="the commit the range starts after: the last sweep's, where it was not (new) or "
                      "was (fixed) seen")
    bad: str = Field(description="the commit the sweep ran, where it was (new) or was no longer (fixed) seen")
    state: BisectState
    message: str
    first: Commit | None = Field(None, description="the first commit that shows (new) or no longer shows (fixed) it")
    candidates: list[Commit] = Field(default_factory=list, description="ambiguous: skipped commits it may be any of")
    commits: int = Field(0, description="commits in the range (good, bad]")
    steps: list[BisectStep] = Field(default_factory=list)
    wall_s: float = 0.0

    @property
    def gpu_s(self) -> float:
        return sum(step.gpu_s for step in self.steps)

    @property
    def proof(self) -> BisectStep | None:
        """The step that tested the named commit: the run that proved it."""
        if self.first is None:
            return None
        return next((s for s in self.steps if s.commit.hash == self.first.hash and s.verdict != "skipped"), None)
