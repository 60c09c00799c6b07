"""replay's Triton checks on this CPU machine: autotune choices recorded per process and diffed (A1), and a persistent
autotune cache that cannot be written (A2).

Triton cannot run here, so the program imports a stand-in `triton.runtime.autotuner` from its own directory: an
`Autotuner` class with Triton's attributes (`fn`, `cache`, `bench_time`, `cache_results`) and a `run` that picks a
config. What is tested is replay's side: the import hook that patches `Autotuner.run` in a fresh process, the record
of every choice (also of an autotuner the program drops at once), the diff between processes and the findings.
On a GPU machine with Triton, replay of tests/gpu/programs/replay_splitk.py meets Triton's real autotuner
(docs/replay.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing.runner import run_probe

STAND_IN = {
    "triton/__init__.py": "from triton.runtime import autotuner  # noqa: F401\n",
    "triton/runtime/__init__.py": "",
    "triton/runtime/autotuner.py": '''
class Config:
    def __init__(self, split_k):
        self.split_k = split_k

    def __str__(self):
        return f"SPLIT_K: {self.split_k}"


class Autotuner:
    def __init__(self, fn, configs, pick, cache_results=False):
        self.fn, self.configs, self.pick, self.cache_results = fn, configs, pick, cache_results
        self.cache = {}

    def run(self, *key):
        if key not in self.cache:
            self.bench_time = 0.01
            self.cache[key] = self.pick(self.configs)
        return self.cache[key]
''',
    "tuned.py": '''
import os
from pathlib import Path

import torch
from torch import nn

from cuprobe.probes.replay import step


def _splitk_kernel():
    pass


class Tuned(nn.Module):
    def __init__(self, pick):
        super().__init__()
        self.pick = pick

    def forward(self, x):
        from triton.runtime.autotuner import Autotuner, Config

        # A new autotuner per call, dropped at once (as the determinism probe's split-K matmul does).
        tuner = Autotuner(_splitk_kernel, [Config(1), Config(4)], self.pick)
        return x * tuner.run(256, 256, 8192).split_k


def _train(pick):
    model = Tuned(pick)
    for _ in range(2):
        model(torch.ones(4))
        step()


def steady():
    _train(lambda configs: configs[0])


def planted():
    """Process 0 picks SPLIT_K 1, process 1 SPLIT_K 4: they share a fresh TRITON_CACHE_DIR and run in turn."""
    marks = Path(os.environ["TRITON_CACHE_DIR"]) / "places"
    marks.mkdir(parents=True, exist_ok=True)
    place = len(list(marks.iterdir()))
    (marks / str(os.getpid())).touch()
    _train(lambda configs: configs[place % 2])


def writes_cache():
    """Touches its cache directory first, as compiling a Triton kernel does."""
    Path(os.environ["TRITON_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
    steady()
''',
}


@pytest.fixture
def program(tmp_path: Path) -> Path:
    for name, text in STAND_IN.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def replay(workdir: Path, **params: Any) -> RunResult:
    return run_probe(ProbeRequest(probe="replay", params=params), workdir=workdir / "run")


def test_choices_of_autotuners_the_program_drops_are_recorded_and_equal(program: Path) -> None:
    result = replay(program, entry="tuned:steady", cwd=str(program), processes=2)
    assert result.outcome is Outcome.CLEAN, result.message
    tune = result.cases[0].observations["autotune"]
    assert tune["differ"] == []
    for tuners in tune["processes"]:
        assert [t["kernel"] for t in tuners] == ["_splitk_kernel", "_splitk_kernel#2"]
        assert all(t["choices"] == {"(256, 256, 8192)": "SPLIT_K: 1"} and t["benchmarked"] for t in tuners)


def test_a_planted_autotune_divergence_is_an_a1_finding_next_to_its_consequence(program: Path) -> None:
    result = replay(program, entry="tuned:planted", cwd=str(program), processes=2, capture=False)
    assert result.outcome is Outcome.FINDINGS, result.message
    [a1] = [f for f in result.findings if f.kind == "replay-autotune"]
    assert a1.signature == "replay-autotune|_splitk_kernel"
    assert "at 2 key(s)" in a1.message and "SPLIT_K: 1 / SPLIT_K: 4" in a1.message
    differ = result.cases[0].observations["autotune"]["differ"]
    assert [d["kernel"] for d in differ] == ["_splitk_kernel", "_splitk_kernel#2"]
    [divergence] = [f for f in result.findings if f.kind == "replay-divergence"]
    assert divergence.signature == "replay|Tuned|output|forward"  # the different config changed the result


def test_an_unwritable_persistent_autotune_cache_is_an_a2_finding(program: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    cache = tmp_path / "a-file" / "triton-cache"  # cannot be created, for root too
    result = replay(program, entry="tuned:steady", cwd=str(program), processes=2, persistent_autotune=True,
                    triton_cache_dir=str(cache))
    assert result.outcome is Outcome.FINDINGS, result.message
    [a2] = result.findings
    assert a2.signature == "replay-autotune-cache|unwritable"
    assert f"TRITON_CACHE_DIR {cache}" in a2.message and "NotADirectoryError" in a2.message
    assert "the program then failed" not in a2.message  # this program never wrote there


def test_a_program_that_fails_on_the_unwritable_cache_gets_the_a2_finding_not_probe_error(
    program: Path, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    cache = tmp_path / "a-file" / "triton-cache"
    result = replay(program, entry="tuned:writes_cache", cwd=str(program), processes=2, persistent_autotune=True,
                    triton_cache_dir=str(cache))
    assert result.outcome is Outcome.FINDINGS, result.message
    [a2] = result.findings
    assert a2.signature == "replay-autotune-cache|unwritable"
    assert "the program then failed: process 0: the program raised NotADirectoryError" in a2.message
    without = replay(program, entry="tuned:writes_cache", cwd=str(program), processes=2, triton_cache_dir=str(cache))
    assert without.outcome is Outcome.PROBE_ERROR  # no persistent autotuning asked for: the failure, as it is
