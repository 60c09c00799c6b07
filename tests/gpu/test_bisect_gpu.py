"""On the GPU: the nightly sweep over a team's own repository and the bisect of its new finding, for real. A git
repository made here holds a tiny CUDA program (built by the sweep's build command, nvcc) whose kernel starts writing
past its buffer at a known commit among ten, and one commit that does not compile; memcheck finds the write at the
branch head, and `git bisect run` names the commit. The CPU twin is tests/unit/sweep/test_nightly_bisect.py.

Run on the GPU box: .venv/bin/python -m pytest -q tests/gpu/test_bisect_gpu.py (about a minute per sanitizer)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.bisect import Bisection
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.sweep.compare import changes
from cuprobe.service.sweep.culprits import bisect_changes, remove_checkout
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.diff import SweepDiff
from cuprobe.service.sweep.execute import LocalRunner, run_sweep
from cuprobe.service.sweep.own_tests import check_out

pytestmark = pytest.mark.gpu

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
BAD_AT = 7
BROKEN_AT = 5  # git's first pick in this range: the bisect must skip it and go on
# fill.cu at each commit: a 64-float buffer, and a kernel writing COUNT floats into it (from BAD_AT: 256 past its end).
FILL = """#include <cstdio>
#include <cuda_runtime.h>
__global__ void fill(float *out, int count) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = (float)i;
}}
int main() {{
  const int size = 64, count = {count};
  float *buffer = nullptr;
  if (cudaMalloc(&buffer, size * sizeof(float)) != cudaSuccess) return 2;
  fill<<<(count + 127) / 128, 128>>>(buffer, count);
  cudaError_t status = cudaDeviceSynchronize();
  cudaFree(buffer);
  std::printf("filled %d: %s\\n", count, cudaGetErrorString(status));
  return 0;
}}{tail}
"""


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, number: int) -> str:
    count = "size + 256" if number >= BAD_AT else "size"
    tail = "\nthis line does not compile" if number == BROKEN_AT else ""
    (repo / "fill.cu").write_text(FILL.format(count=count, tail=tail))
    (repo / "overrun.cu").write_text(FILL.format(count="size + 256", tail=""))  # the positive control, every commit
    (repo / "NOTES").write_text(f"change {number}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"change {number}" + (": one more block" if number == BAD_AT else ""))
    return _git(repo, "rev-parse", "HEAD").strip()


def test_a_real_bisect_names_the_commit_whose_kernel_writes_out_of_bounds(settings: Settings, tmp_path: Path) -> None:
    if not Path(NVCC).exists():
        pytest.skip("needs nvcc to build the repository's CUDA program")
    repo = tmp_path / "team"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    settings = settings.model_copy(update={"data_dir": tmp_path / "data", "confirm": False})
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    definition = parse_definition(f"""
name = "own-nightly-gpu"
repeats = 2
[repo]
url = "{repo}"
build = "{NVCC} -lineinfo -o fill fill.cu && {NVCC} -lineinfo -o overrun overrun.cu"
[[test]]
name = "fill"
kind = "command"
tool = "memcheck"
argv = ["./fill"]
[[test]]
name = "overrun"
kind = "command"
tool = "memcheck"
control = true
expect = "invalid-global-write"
argv = ["./overrun"]
""")

    def nightly() -> tuple[Sweep, SweepDiff, list[Bisection]]:
        sweep_id = f"night{len(sweeps.list())}"
        sweeps.start(sweep_id, definition.name)
        checkout = check_out(definition, settings)
        # Findings in the repository's files named from its root, as `cuprobe sweep run` does.
        roots = settings.model_copy(update={"source_roots": [*settings.source_roots, str(checkout.path)]})
        sweep = run_sweep(definition, LocalRunner(tmp_path / sweep_id, roots, 1), sweep_id=sweep_id,
                          checkout=checkout)
        sweeps.save(sweep)
        diff = changes(sweeps, sweep)
        found = bisect_changes(sweep, diff, sweeps, definition, checkout, roots)
        remove_checkout(checkout)
        return sweep, diff, found

    hashes = [_commit(repo, 1)]
    first, _, _ = nightly()
    assert first.cases[0].outcome.value == "clean", first.cases[0].message
    assert first.cases[1].control and first.cases[1].outcome.value == "findings", first.cases[1].message
    hashes += [_commit(repo, n) for n in range(2, 11)]
    started = time.monotonic()
    second, diff, found = nightly()
    took = time.monotonic() - started
    assert second.cases[0].outcome.value == "findings", second.cases[0].message
    assert any("memcheck" in item.signature for item in diff.new)
    assert found, "no bisect ran for the new finding"
    bisection = next((b for b in found if "write" in b.signature.lower()), found[0])
    print(f"\nbisect of {bisection.commits} commits: {bisection.message}; {len(bisection.steps)} steps, "
          f"{bisection.gpu_s / 60:.2f} GPU min, {bisection.wall_s:.1f} s bisecting, {took:.1f} s with the sweep")
    for step in bisection.steps:
        print(f"  {step.commit.short} {step.commit.title:24} {step.verdict:8} {step.seen:4} {step.wall_s:5.1f} s"
              f"  {step.reason[:100]}")
    assert bisection.state == "found", bisection.message
    assert "fill.cu:" in bisection.signature and str(tmp_path) not in bisection.signature  # named from the root
    assert bisection.first is not None and bisection.first.hash == hashes[BAD_AT - 1]
    assert bisection.first.title == "change 7: one more block" and "Ada Lovelace" in bisection.first.author
    by_commit = {step.commit.hash: step for step in bisection.steps}
    assert by_commit[hashes[BAD_AT - 2]].verdict == "clean"
    assert by_commit[hashes[BROKEN_AT - 1]].verdict == "skipped"
