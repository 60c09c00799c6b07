"""One step of `git bisect run`: build the checked-out commit, run the one test that showed a finding under the same
tool with the sweep's repeats, and answer git (0 old, 1 new, 125 skip: could not build or run, 255 abort).

Run as `python -m cuprobe.service.sweep.bisect_step SPEC.json` in the bisect's worktree; each step appends what it
found (service.models.bisect.BisectStep) as one JSON line to the spec's evidence file.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.models.bisect import BisectStep, StepVerdict
from cuprobe.service.sweep.checkout import build, commit_of

SKIP, ABORT = 125, 255
# Settings a step reads from its own environment, never from the spec file: secrets and where the services are.
FROM_ENVIRONMENT = {"database_url", "broker_url", "result_backend_url", "sweep_webhook_url", "api_token", "api_url"}


class StepSpec(BaseModel):
    """What every step of one bisect does (written once by service/sweep/bisect.py)."""

    request: dict[str, Any]
    signature: str
    repeats: int
    build: str | None
    build_timeout_s: float
    direction: Literal["new", "fixed"]
    evidence: Path
    workdir: Path
    mode: Literal["local", "service"]
    settings: dict[str, Any]


def answer(direction: str, verdict: StepVerdict) -> int:
    """git's exit status for a verdict: the old term is 0, the new one 1 (new: old = clean; fixed: old = shows)."""
    if verdict == "skipped":
        return SKIP
    shows = verdict == "shows"
    return int(shows) if direction == "new" else int(not shows)


def judge(results: list[RunResult], signature: str) -> tuple[StepVerdict, str, str]:
    """(verdict, seen k/n, reason): shows when any repeat saw the signature; clean only when every repeat ran and none
    did; skipped when a repeat could not run and none showed it."""
    ran = [r for r in results if r.outcome.ran]
    seen = sum(any(f.signature == signature and not f.fallout for f in r.findings) for r in ran)
    said = f"{seen}/{len(ran)}"
    if seen:
        return "shows", said, f"seen in {said} repeat(s)"
    if len(ran) < len(results):
        failed = next(r for r in results if not r.outcome.ran)
        return "skipped", said, f"the test could not run ({failed.outcome}): {failed.message}"[:2000]
    others = sorted({f.signature for r in ran for f in r.findings})
    beside = f"; other findings: {', '.join(others[:3])}" if others else ""
    return "clean", said, f"not seen in {len(ran)} repeat(s){beside}"


def _runner(spec: StepSpec, settings: Settings, workdir: Path) -> Any:
    if spec.mode == "service":  # the scheduled sweep's bisect: the step's runs are jobs on the GPU workers
        from cuprobe.service.db.store import Store
        from cuprobe.service.queue.broker import enqueue
        from cuprobe.service.queue.celery_app import make_celery
        from cuprobe.service.sweep.execute import ServiceRunner

        app = make_celery(settings)
        return ServiceRunner(Store(settings.database), settings, lambda job: enqueue(app, job))
    from cuprobe.service.sweep.execute import LocalRunner

    return LocalRunner(workdir, settings, slots=1)


def step(spec: StepSpec, here: Path) -> BisectStep:
    """Build and test the commit checked out at `here`."""
    started = time.monotonic()
    commit = commit_of(here, "HEAD")
    if why := build(here, spec.build, spec.build_timeout_s):
        return BisectStep(commit=commit, verdict="skipped", reason=why, wall_s=round(time.monotonic() - started, 3))
    settings = Settings(**spec.settings)
    workdir = spec.workdir / commit.hash[:12]
    request = ProbeRequest.model_validate(spec.request)
    runner = _runner(spec, settings, workdir)
    results = [r for _, r in sorted(runner.run_all([request] * spec.repeats), key=lambda pair: pair[0])]
    jobs: dict[int, str] = getattr(runner, "job_ids", {})
    runs = [f"job:{jobs[i]}" if i in jobs else str(workdir / f"slot{i:04d}") for i in range(len(results))]
    verdict, seen, reason = judge(results, spec.signature)
    return BisectStep(
        commit=commit,
        verdict=verdict,
        seen=seen,
        outcomes=[r.outcome.value for r in results],
        reason=reason,
        wall_s=round(time.monotonic() - started, 3),
        gpu_s=round(sum(r.duration_s or 0.0 for r in results if r.outcome is not Outcome.UNAVAILABLE), 3),
        runs=runs,
    )


def main(argv: list[str]) -> int:
    try:
        spec = StepSpec.model_validate_json(Path(argv[0]).read_text())
        found = step(spec, Path.cwd())
        with spec.evidence.open("a", encoding="utf-8") as out:
            out.write(found.model_dump_json() + "\n")
        return answer(spec.direction, found.verdict)
    except BaseException:  # a step that breaks must stop the bisect, never read as a verdict on the commit
        traceback.print_exc()
        return ABORT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
