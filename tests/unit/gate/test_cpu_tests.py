"""`gpu = false` on a bare `[[test]]`: the service queues its tests for a CPU worker; a sanitizer refuses it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cuprobe.service.models import Tool
from cuprobe.service.models.queues import Lane
from cuprobe.service.owntests.discover import TestCommand, TestEntry, command_params
from cuprobe.service.probing.admission import admit


def _queue(entry: TestEntry) -> str:
    params = command_params(entry, TestCommand(case="t", argv=["python3", "-m", "pytest", "t.py"], cwd="/tmp"))
    return admit("command", entry.tool, params).queue("sm90", Lane.GATE)


def test_bare_tests_that_need_no_gpu_go_to_the_cpu_queue_and_others_to_a_gpu() -> None:
    cpu = TestEntry(name="cpu", kind="pytest", tool=Tool.NONE, paths=["t.py"], gpu=False)
    assert _queue(cpu) == "cpu"
    assert _queue(TestEntry(name="gpu", kind="pytest", tool=Tool.NONE, paths=["t.py"])) == "gpu.sm90"


def test_gpu_false_under_a_sanitizer_is_refused_saying_why() -> None:
    with pytest.raises(ValidationError, match='gpu = false needs tool = "none": memcheck runs only on a GPU'):
        TestEntry(name="m", kind="pytest", tool=Tool.MEMCHECK, paths=["t.py"], gpu=False)
