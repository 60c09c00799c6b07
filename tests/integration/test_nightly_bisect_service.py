"""The scheduled nightly over a team's repository through the service: a real Celery GPU worker (the replay's GPU
and stand-in sanitizer, running the real command probe and so the repository's real program), real Redis and a
SQLite store. The sweep's tests and then every bisect step are jobs on the worker's sweep lane, run in cuprobe's own
worktrees, and the stored sweep names the commit with the jobs that proved it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.probing.gpus import GpuDevice
from cuprobe.service.queue.broker import enqueue
from cuprobe.service.queue.celery_app import make_celery
from cuprobe.service.sweep.execute import ServiceRunner
from cuprobe.service.sweep.scheduled import run_and_store
from tests.conftest import BOX_ROOT, REPLAY, VERSIONS, capture
from tests.integration.stack import Stack, fresh_stack
from tests.unit.sweep.test_nightly_bisect import BAD_AT, WITNESS, _commit, _definition, _git


@pytest.fixture
def gpu_stack(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    env = {
        "CUPROBE_COMMAND_ENABLED": "1",
        "CUPROBE_COMMAND_ALLOWLIST": os.path.realpath(sys.executable),  # the repository's test: `python fill.py`
        "CUPROBE_SANITIZER_PATH": str(REPLAY),
        "CUPROBE_CONFIRM": "0",
        # A test process's limit is its own plus the sanitizer's 60 s: jobs of 90 s fit under these.
        "CUPROBE_VISIBILITY_TIMEOUT_S": "400",
        "CUPROBE_TASK_SOFT_TIME_LIMIT_S": "300",
    }
    with fresh_stack(tmp_path_factory, "nightly-bisect", **env) as stack:
        for name, value in stack.env.items():  # the bisect's step processes read where the store and broker are
            monkeypatch.setenv(name, value)
        stack.start_worker(
            1,
            gpu=GpuDevice(0, "GPU-nightly-bisect", "NVIDIA H200", "9.0"),
            env={
                "CUPROBE_REPLAY_CASE": str(capture(VERSIONS[1], "memcheck_ok")),
                "CUPROBE_REPLAY_TARGET": "1",
                "CUPROBE_SOURCE_ROOTS": json.dumps([BOX_ROOT]),
                "CUPROBE_REPLAY_WHEN": json.dumps(
                    {"file": WITNESS, "case": str(capture(VERSIONS[1], "memcheck_oob"))}
                ),
            },
        )
        yield stack


def test_the_scheduled_nightly_bisects_on_the_gpu_workers(gpu_stack: Stack, tmp_path: Path) -> None:
    repo = tmp_path / "team"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    definition = tmp_path / "nightly.toml"
    definition.write_text(_definition(repo).replace('argv = [', "timeout_s = 30\nargv = ["))
    celery = make_celery(gpu_stack.settings)

    def night() -> str:
        runner = ServiceRunner(gpu_stack.store, gpu_stack.settings, lambda job: enqueue(celery, job), poll_s=0.2)
        return run_and_store(definition, gpu_stack.store, gpu_stack.settings, runner).id

    _commit(repo, 1, "first")
    first = SweepStore(gpu_stack.store).get(night())
    assert first is not None
    assert [c.outcome.value for c in first.cases] == ["clean", "findings"], [c.message for c in first.cases]
    hashes = [_commit(repo, n, "fill: one more element" if n == BAD_AT else f"change {n}") for n in range(2, 11)]
    sweep = SweepStore(gpu_stack.store).get(night())
    assert sweep is not None
    assert [c.outcome.value for c in sweep.cases] == ["findings", "findings"], sweep.cases[0].message
    (bisection,) = sweep.bisections
    assert bisection.state == "found", (bisection.message, gpu_stack.worker_log.read_text()[-3000:])
    assert bisection.first is not None and bisection.first.hash == hashes[BAD_AT - 2]
    proof = bisection.proof
    assert proof is not None and proof.runs and all(run.startswith("job:") for run in proof.runs)
    job = gpu_stack.store.get(proof.runs[0].removeprefix("job:"))
    assert job is not None and job.state == "done" and job.queue == "gpu.sm90.sweep"
    # Each step's job ran the test in the checkout at the definition's one path, gone now that the sweep is kept.
    assert job.request["params"]["cwd"] == str(gpu_stack.settings.repos / "worktrees" / "own-nightly")
    assert list((gpu_stack.settings.repos / "worktrees").iterdir()) == []
