"""A probe process retains device 0's primary context once and keeps it between blocks (the probe's cases, then the
confirmer's control cases): no second context is made. A block that leaves the context broken (a sticky error)
lets it go, so the next block gets a new one. pycuda and the driver cannot exist on a CPU machine: stand-ins
record what the code asks of them."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from cuprobe.probes import gpu


class CudaError(Exception):
    pass


class Context:
    def __init__(self, log: list[str], number: int) -> None:
        self.log, self.number = log, number

    def push(self) -> None:
        self.log.append(f"push {self.number}")

    def pop(self) -> None:
        self.log.append(f"pop {self.number}")

    def detach(self) -> None:
        self.log.append(f"detach {self.number}")


class FakeDriver(types.ModuleType):
    """pycuda.driver as far as cuda_context uses it; `broken` makes the next synchronize raise."""

    Error = CudaError

    def __init__(self) -> None:
        super().__init__("pycuda.driver")
        self.log: list[str] = []
        self.made = 0
        self.broken = False
        driver = self

        class Device:
            def __init__(self, ordinal: int) -> None:
                assert ordinal == 0

            def retain_primary_context(self) -> Context:
                driver.made += 1
                driver.log.append(f"retain {driver.made}")
                return Context(driver.log, driver.made)

        class ContextClass:
            @staticmethod
            def synchronize() -> None:
                if driver.broken:
                    driver.broken = False
                    raise CudaError("an illegal memory access was encountered")

        self.Device = Device
        self.Context = ContextClass

    def init(self) -> None:
        pass


class NoLibcuda:
    """libcuda.so.1's calls as cuda_context and schedule_flag make them, each refusing (code 100: no device)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: 100


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDriver]:
    fake = FakeDriver()
    package = types.ModuleType("pycuda")
    package.driver = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", fake)
    monkeypatch.setattr(gpu, "cuda_device_count", lambda: 1)
    monkeypatch.setattr(gpu.ctypes, "CDLL", lambda name: NoLibcuda())
    monkeypatch.setattr(gpu, "_primary", {})
    yield fake


def test_two_blocks_share_one_retained_context(driver: FakeDriver) -> None:
    with gpu.cuda_context():
        pass
    with gpu.cuda_context():
        pass
    assert driver.log == ["retain 1", "push 1", "pop 1", "push 1", "pop 1"]


def test_a_block_that_broke_the_context_lets_it_go_and_the_next_block_gets_a_new_one(driver: FakeDriver) -> None:
    with gpu.cuda_context():
        driver.broken = True
    with gpu.cuda_context():
        pass
    assert driver.log == ["retain 1", "push 1", "pop 1", "detach 1", "retain 2", "push 2", "pop 2"]


def test_a_block_that_raised_still_pops_the_context(driver: FakeDriver) -> None:
    with pytest.raises(RuntimeError, match="case failed"), gpu.cuda_context():
        raise RuntimeError("case failed")
    assert driver.log == ["retain 1", "push 1", "pop 1"]
