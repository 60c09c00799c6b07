"""A sweep through the service with more jobs than the worker has slots: a real Celery worker readies a spare in
each pool process for the next job like the last, the later jobs run in them with their own parameters and
findings, and the spares nobody takes end after the idle time. The sanitizer is the replay stand-in running the
real selftest target; the worker is a GPU worker pinned to a GPU by name (CUDA_VISIBLE_DEVICES), which is all its
warm starts and GPU lock read of the GPU."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from cuprobe.service.models import Outcome
from cuprobe.service.probing.gpus import GpuDevice
from cuprobe.service.queue.broker import enqueue
from cuprobe.service.queue.celery_app import make_celery
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import ServiceRunner, run_sweep
from cuprobe.service.worker.gpu_slots import spares_folder
from cuprobe.service.worker.spare_registry import PGID_NAME
from tests.conftest import REPLAY, VERSIONS, capture
from tests.integration.stack import Stack, fresh_stack

GPU = "GPU-warm-integration"
SLOTS = 2
WAVES = """
name = "waves"
[[entry]]
probe = "selftest"
tool = "initcheck"
grid = { behaviour = ["ok", "violate"], seconds = [1.0, 1.2, 1.4] }
"""


@pytest.fixture
def warm_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(tmp_path_factory, "warm") as stack:
        stack.start_worker(
            SLOTS,
            gpu=GpuDevice(0, GPU, "NVIDIA H200", "9.0"),
            env={
                "CUPROBE_SANITIZER_PATH": str(REPLAY),
                "CUPROBE_REPLAY_CASE": str(capture(VERSIONS[1], "initcheck_ok")),
                "CUPROBE_REPLAY_TARGET": "1",
                "CUPROBE_WORKER_SPARE_IDLE_S": "3",
            },
        )
        yield stack


def test_a_sweeps_later_jobs_run_in_spares_the_worker_readied(warm_stack: Stack) -> None:
    celery = make_celery(warm_stack.settings)
    runner = ServiceRunner(warm_stack.store, warm_stack.settings, lambda job: enqueue(celery, job), 0.2, SLOTS)
    sweep = run_sweep(parse_definition(WAVES), runner)

    # Six processes at K = 2: the first four are marked, so each later job can find a spare in its pool process.
    jobs = warm_stack.store.jobs(probe="selftest", limit=100)
    assert sorted(bool(j.request.get("warm_next")) for j in jobs) == [False] * 2 + [True] * 4
    warm = [w for p in sweep.processes for w in p.warm]
    # The first wave has nothing to take; of the four after it, each ran in a spare in 12 of 13 runs here (one run on
    # a loaded 2-core machine: three), a job that comes to a pool process whose last job was not marked runs cold.
    assert len(warm) == 6 and not any(warm[:2]) and sum(warm) >= 2, (warm, warm_stack.worker_log.read_text()[-3000:])
    # Warm or cold, each case its own parameters' outcome and finding.
    for case in sweep.cases:
        expected = Outcome.FINDINGS if case.point["behaviour"] == "violate" else Outcome.CLEAN
        assert case.outcome is expected, case
        assert [f.kind for f in case.findings] == (["expectation-violation"] if expected is Outcome.FINDINGS else [])
    # Spares nobody took end after the idle time: the worker holds no sanitizer process on the GPU.
    root = spares_folder(warm_stack.settings.data_dir, GPU)
    deadline = time.monotonic() + 60
    while list(root.glob(f"*/*/{PGID_NAME}")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(root.glob(f"*/*/{PGID_NAME}")) == []


