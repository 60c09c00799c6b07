"""A replay target on the GPU: the determinism probe's autotuned Triton split-K matmul, wrapped in a module."""
# Replay calls main() (or planted()) with `cwd` = tests/gpu/programs; the module's output is digested and step()
# closes the step.

import os
from pathlib import Path

import torch
from torch import nn
from triton.runtime.cache import FileCacheManager

from cuprobe.probes.replay import step
from cuprobe.probes.triton_splitk import splitk_matmul


class SplitK(nn.Module):
    """fp16 [256, 8192] @ [8192, 256] through the autotuned split-K kernel (the config it picks is recorded)."""

    def __init__(self, prune=None):  # type: ignore[no-untyped-def]
        super().__init__()
        self.prune = prune

    def forward(self, seed: int) -> torch.Tensor:
        persistent = os.environ.get("TRITON_CACHE_AUTOTUNING") == "1"
        out, _ = splitk_matmul([256, 256, 8192], seed, persistent, self.prune)
        return torch.from_numpy(out)


def main() -> None:
    model = SplitK()
    for seed in range(2):
        model(seed)
        step()


def _ordinal() -> int:
    """This process's place among the replay's processes: they run one after another and share TRITON_CACHE_DIR."""
    marks = Path(os.environ["TRITON_CACHE_DIR"]) / "planted-ordinals"
    marks.mkdir(parents=True, exist_ok=True)
    place = len(list(marks.iterdir()))
    (marks / str(os.getpid())).touch()
    return place


def planted() -> None:
    """A1's positive control: even processes may only pick SPLIT_K 1, odd ones only SPLIT_K 4 (the same key)."""
    place = _ordinal()

    def prune(configs, named_args, **kwargs):  # type: ignore[no-untyped-def]
        wanted = 1 if place % 2 == 0 else 4
        return [c for c in configs if c.kwargs["SPLIT_K"] == wanted][:1]

    model = SplitK(prune)
    model(0)
    step()


class DropAutotuneResults(FileCacheManager):
    """A cache that cannot keep autotune results (as on a read-only or full volume): their writes are dropped."""

    def put(self, data, filename, binary=True):  # type: ignore[no-untyped-def]
        if filename.endswith(".autotune.json"):
            return os.path.join(self.cache_dir, filename)
        return super().put(data, filename, binary)
