"""Where replay's digest time goes within a step on a GPU: wall time inside each part of the digest path.

    python3 tests/gpu/replay_split.py [--steps 60] [--output-grads none] [--staging]

Trains the example transformer with replay's tape, timing (perf_counter, per step, median) the step, the
batch launch (replay_batch.launch), the wait for the device inside the step's one host copy (the `.cpu()` in
resolve), the fold on the host (_fold), and the rest of the step's close (Tape._flush less those); and for the
bare program, the step and the final synchronisation (how far the GPU lags the host at a step's end).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch

from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay import tape as replay_tape
from cuprobe.probes.replay import triton as replay_triton
from cuprobe.probes.replay.example import build, train_step
from cuprobe.probes.replay.tape import Tape

SPENT: dict[str, float] = defaultdict(float)


def timed(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - began

    setattr(owner, name, wrapper)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--output-grads", default="none", choices=["retain", "hooks", "none"])
    parser.add_argument("--staging", action="store_true", help="digests through the staging buffer, not Triton")
    args = parser.parse_args()
    replay_triton.USE = not args.staging
    torch.manual_seed(0)
    parts = build("cuda", "none")
    rows: dict[str, list[float]] = defaultdict(list)
    for _ in range(5):
        train_step(*parts)
    torch.cuda.synchronize()
    for _ in range(args.steps):  # bare: the step's host time, then how long the GPU still needs
        began = time.perf_counter()
        train_step(*parts)
        issued = time.perf_counter()
        torch.cuda.synchronize()
        rows["bare: host issues the step"].append(issued - began)
        rows["bare: final sync (GPU behind the host)"].append(time.perf_counter() - issued)
        rows["bare: step"].append(time.perf_counter() - began)
    orig_cpu = torch.Tensor.cpu
    timed(replay_batch, "launch", "launch")
    timed(replay_batch, "_fold", "fold")
    timed(replay_batch, "resolve", "resolve")
    timed(replay_tape.Tape, "_flush", "flush")

    def cpu(self: torch.Tensor, *a: Any, **k: Any) -> torch.Tensor:
        began = time.perf_counter()
        try:
            return orig_cpu(self, *a, **k)
        finally:
            SPENT["host copy (waits for the GPU)"] += time.perf_counter() - began

    torch.Tensor.cpu = cpu  # type: ignore[method-assign,assignment]
    tape = Tape(output_grads=args.output_grads)
    replay_batch.PATHS.clear()
    tape.install()
    try:
        for _ in range(5):
            train_step(*parts)
        torch.cuda.synchronize()
        for _ in range(args.steps):
            SPENT.clear()
            began = time.perf_counter()
            train_step(*parts)
            issued = time.perf_counter()
            torch.cuda.synchronize()
            end = time.perf_counter()
            rows["tape: step"].append(end - began)
            rows["tape: final sync"].append(end - issued)
            for label in ("launch", "resolve", "host copy (waits for the GPU)", "fold", "flush"):
                rows[f"tape: {label}"].append(SPENT[label])
            rows["tape: flush less launch and resolve"].append(SPENT["flush"] - SPENT["resolve"] - SPENT["launch"])
            rows["tape: resolve less host copy and fold"].append(
                SPENT["resolve"] - SPENT["host copy (waits for the GPU)"] - SPENT["fold"])
            rows["tape: outside flush"].append(end - began - SPENT["flush"])
    finally:
        tape.remove()
        torch.Tensor.cpu = orig_cpu  # type: ignore[method-assign]
    how = "staging buffer" if args.staging or not replay_triton.available() else "Triton kernel"
    print(f"output_grads {args.output_grads}; digests through the {how}; {args.steps} steps; median per step; "
          f"batches per path: {dict(replay_batch.PATHS)}")
    for label, values in rows.items():
        print(f"{label:<42}{statistics.median(values) * 1e3:>8.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
