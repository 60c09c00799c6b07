"""The Triton digest kernel gives every tensor the digest of the documented function, as the staging path does.

On a machine with CUDA and Triton the batch goes through replay_batch.launch's Triton path;
elsewhere the kernel runs in Triton's interpreter on the CPU, in a subprocess (the interpreter is chosen when Triton
is imported), from the folder CUPROBE_TRITON_SITE names (.ci/run installs Triton and numpy there) or from this
environment; with no Triton at all there is no kernel to test, and the test says so.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay import triton as replay_triton
from cuprobe.probes.replay.digest import ROW, digest

ROOT = Path(__file__).resolve().parents[3]


def tensors(device: str) -> list[torch.Tensor]:
    """Every kind of tensor the kernel takes: several rows, partial words (4 bytes), NaN, inf, past float32's
    range, half and bfloat16, integers, an empty tensor."""
    gen = torch.Generator().manual_seed(7)
    made = [
        torch.randn(3000, generator=gen),
        torch.randn(5, 8, generator=gen).bfloat16(),
        torch.tensor(3.5),
        torch.zeros(0),
        torch.arange(2000, dtype=torch.int64) * (1 << 40),
        torch.tensor([float("nan"), 1.0, -2.0]),
        torch.tensor([float("-inf"), 1.0]).half(),
        torch.randn(ROW * 2 + 6, generator=gen).double() * 1e300,
        torch.randn(2, 4, generator=gen).half(),
        torch.randint(-100, 100, (37,), dtype=torch.int32, generator=gen),
        torch.randn(4, 6, generator=gen)[:, 1],  # not contiguous: read from a copy
        torch.randn(6, 8, generator=gen).t(),  # a transposed view (attention outputs are)
        torch.randn(3, dtype=torch.complex64, generator=gen),  # read as pairs of float32
        torch.tensor([True, False, True, True]),  # read as bytes
        torch.randn(9, generator=gen)[1:],  # starts mid-word
    ]
    return [t.to(device) for t in made]


def same(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))


INTERPRETED = """
import sys, math, torch
import triton.language as tl
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from cuprobe.probes.replay import batch as replay_batch, triton as replay_triton
from cuprobe.probes.replay.digest import ROW, digest, word_weights
from test_replay_triton import tensors, same
ts = tensors("cpu")
key, ptrs, entries = replay_triton.read(ts)
layout = replay_batch._layout(key)
out = torch.zeros(2 * len(ts), dtype=torch.int64)
types = {{torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32, torch.float64: tl.float64}}
for dtype, (first, stop) in layout.spans.items():
    if stop > first:
        replay_triton._kernel()[(stop - first,)](
            torch.tensor(ptrs), torch.tensor(layout.sizes32), layout.owner, torch.tensor(layout.starts),
            word_weights("cpu"), layout.row_weight, out, len(ts), first, ROW_WORDS=ROW,
            ELEMENT=types.get(dtype, tl.int32), FLOAT=dtype.is_floating_point)
got = replay_batch._fold(replay_batch.Launched(layout, len(ts), out, folded=True), out)
bad = [str(t.dtype) for t, g in zip(ts, got) if not same(g, digest(t))]
print("differ:", bad)
sys.exit(1 if bad else 0)
"""


def test_the_kernel_gives_every_tensor_its_documented_digest() -> None:
    if torch.cuda.is_available() and replay_triton.available():
        ts = tensors("cuda")
        assert replay_triton.read(ts) is not None
        batch = replay_batch.launch(ts)
        assert batch.folded  # the Triton path took it, not the staging buffer
        got = replay_batch.resolve([batch])
        assert all(same(g, digest(t.cpu())) for t, g in zip(ts, got, strict=True)), got
        return
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    site = os.environ.get("CUPROBE_TRITON_SITE")  # Triton and numpy installed apart from the tests (.ci/run)
    if site:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
    else:
        pytest.importorskip("triton", reason="no Triton here (set CUPROBE_TRITON_SITE to a folder holding Triton "
                            "and numpy, as .ci/run does, to run the kernel in Triton's interpreter)")
        pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")
    script = INTERPRETED.format(root=str(ROOT), tests=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "differ: []" in done.stdout  # the comparison ran, in the interpreter


def test_a_batch_with_a_tensor_the_kernel_cannot_read_goes_to_the_staging_path() -> None:
    assert replay_triton.read([torch.tensor([True, False])]) is None  # 2 bytes: not whole 4-byte units
    assert replay_triton.read([torch.randn(4), torch.randn(3).half()]) is None  # 6 bytes: the whole batch
    key, ptrs, entries = replay_triton.read([torch.randn(4), torch.arange(3), torch.randn(4, 4)[:, 1]]) or ((), [], [])
    assert [dtype for dtype, _ in key] == [torch.float32, torch.int64, torch.float32] and len(ptrs) == 3
    assert entries[2].is_contiguous() and entries[2].data_ptr() == ptrs[2]  # the copy that is read, kept alive
