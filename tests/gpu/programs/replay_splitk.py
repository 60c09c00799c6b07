"""A replay target on the GPU: the determinism probe's autotuned Triton split-K matmul, wrapped in a module."""
# Replay calls main() with `cwd` = tests/gpu/programs; the module's output is digested and step() closes the step.

import os

import torch
from torch import nn
from triton.runtime.cache import FileCacheManager

from probes.replay import step
from probes.triton_splitk import splitk_matmul


class SplitK(nn.Module):
    """fp16 [256, 8192] @ [8192, 256] through the autotuned split-K kernel (the config it picks is recorded)."""

    def forward(self, seed: int) -> torch.Tensor:
        persistent = os.environ.get("TRITON_CACHE_AUTOTUNING") == "1"
        out, _ = splitk_matmul([256, 256, 8192], seed, persistent)
        return torch.from_numpy(out)


def main() -> None:
    model = SplitK()
    for seed in range(2):
        model(seed)
        step()


class DropAutotuneResults(FileCacheManager):
    """A cache that cannot keep autotune results (as on a read-only or full volume): their writes are dropped."""

    def put(self, data, filename, binary=True):  # type: ignore[no-untyped-def]
        if filename.endswith(".autotune.json"):
            return os.path.join(self.cache_dir, filename)
        return super().put(data, filename, binary)
