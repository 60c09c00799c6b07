"""A team's torch test suite through `cuprobe gate --local` on the GPU, as the team keeps it: a src/ layout whose
suite `env` sets PYTHONPATH, run from a directory with its own `probes` and `kernels` packages. Every test judged,
each file in one sanitized process, exit 0; with a defect planted in one test, that test alone is named."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from junitparser import JUnitXml

pytestmark = pytest.mark.gpu

TESTS = '''
import kernels
import probes
import torch


def test_sum():
    x = torch.ones(4096, device="cuda")
    assert x.sum().item() == 4096 * probes.SCALE / 2


def test_matmul():
    a = torch.randn(64, 64, device="cuda")
    assert torch.allclose(a @ torch.eye(64, device="cuda"), a)


def test_double():
    assert kernels.double(torch.arange(8, device="cuda")).sum().item() == 56
'''

PLANTED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _sum_first(src, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.load(src + offs)  # the load lost its mask: 24 floats past the tensor's end
    tl.store(out, tl.sum(tl.where(offs < n, values, 0.0)))


def test_clean():
    assert torch.zeros(16, device="cuda").sum().item() == 0


def test_reads_past_the_end():
    x = torch.ones(1000, device="cuda")
    out = torch.empty(1, device="cuda")
    _sum_first[(1,)](x, out, 1000, BLOCK=1024)
    assert out.item() == 1000
'''


def _project(root: Path, planted: bool) -> Path:
    (root / "src" / "probes").mkdir(parents=True)
    (root / "src" / "probes" / "__init__.py").write_text("SCALE = 2\n")
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("def double(x):\n    return x * 2\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(textwrap.dedent(TESTS))
    if planted:
        (root / "tests" / "test_planted.py").write_text(textwrap.dedent(PLANTED))
    (root / "suite.toml").write_text(
        textwrap.dedent(
            f"""
            name = "own"

            [[probe]]
            name = "memcheck-control"
            probe = "planted"
            tool = "memcheck"
            control = true
            params = {{ defect = "oob" }}

            [[test]]
            name = "ops"
            kind = "pytest"
            tool = "memcheck"
            paths = ["tests"]
            python = "{sys.executable}"
            env = {{ PYTHONPATH = "src:." }}
            timeout_s = 300
            """
        )
    )
    return root


def _gate(root: Path, sanitizer: Path) -> tuple[int, dict[str, str], str]:
    env = dict(os.environ, CUPROBE_SANITIZER_PATH=str(sanitizer))  # the suite's env sets the tests' PYTHONPATH
    done = subprocess.run(
        [sys.executable, "-m", "cuprobe", "gate", "suite.toml", "--local", "--junit", "junit.xml"],
        cwd=root, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )
    cases = {}
    for suite in JUnitXml.fromfile(str(root / "junit.xml")):
        for case in suite:
            cases[case.name] = (type(case.result[0]).__name__.lower() if case.result else "passed")
    return done.returncode, cases, done.stdout + done.stderr


def test_a_suite_with_its_own_probes_and_kernels_packages_is_judged_test_by_test(tmp_path: Path, settings) -> None:
    code, cases, output = _gate(_project(tmp_path, planted=False), settings.sanitizer_path)
    assert code == 0, output
    assert "1 process" in output or "in one process" in output  # test_ops.py's three tests ran together
    assert set(cases.values()) == {"passed"}, cases


def test_a_planted_read_is_named_after_its_test_alone(tmp_path: Path, settings) -> None:
    code, cases, output = _gate(_project(tmp_path, planted=True), settings.sanitizer_path)
    assert code == 1, output
    failed = sorted(name for name, said in cases.items() if said != "passed")
    assert len(failed) == 1 and "test_reads_past_the_end" in failed[0], cases
