"""Each sanitizer run leases its own block of ports: runs started together never share one (the H200 showed
sanitizers started side by side stalling), and a block is free again once its run ends or its holder dies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer import ports
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import RUNS


@pytest.fixture
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "port-locks"
    monkeypatch.setenv("CUPROBE_PORT_LOCK_DIR", str(path))
    return path


def test_leases_held_together_get_disjoint_blocks_and_a_released_block_is_reused(lock_dir: Path) -> None:
    first, second = ports.lease(), ports.lease()
    assert first and second
    assert first.options() == ["--port", "49152", "--max-connections", "10"]
    assert second.base == first.base + first.count  # [49152, 49162) and [49162, 49172): no port in common
    first.release()
    again = ports.lease()
    assert again and again.base == 49152


def test_a_block_held_by_another_process_is_skipped_until_that_process_is_gone(lock_dir: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from service.sanitizer import ports; l = ports.lease(); "
            "print(l.base, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "49152"
    mine = ports.lease()
    assert mine and mine.base == 49162
    holder.kill()  # killed, not released: the OS drops its lock
    holder.wait()
    after = ports.lease()
    assert after and after.base == 49152


def test_every_block_taken_leaves_the_sanitizers_default(lock_dir: Path) -> None:
    held = [ports.lease() for _ in range(ports.BLOCKS)]
    assert all(held) and ports.lease() is None


def test_a_run_passes_its_block_to_the_sanitizer_and_frees_it_after(
    tmp_path: Path, lock_dir: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(RUNS / "uninit-read-initcheck-2026.4.0.0"))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    busy = ports.lease()  # another run on this host holds the first block
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path / "w", settings=replay_settings
    )
    assert result.outcome is Outcome.FINDINGS
    cmd = result.command
    assert cmd[cmd.index("--port") + 1] == "49162" and cmd[cmd.index("--max-connections") + 1] == "10"
    assert cmd.index("--port") < cmd.index("--")  # the sanitizer's option, not the probe's
    nxt = ports.lease()
    assert nxt and nxt.base == 49162 and busy
