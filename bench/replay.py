"""replay's digest overhead per training step, against the bare program, on the built-in small transformer.

    python bench/replay.py [--device cpu|cuda] [--steps 10] [--rounds 5] [--threads N]

One process: the model (2 layers, d_model 256, 4 heads, sequence 128, batch 8, AdamW) trains `steps` steps bare,
then `steps` steps with replay's hooks installed (every module output, output gradient, parameter gradient and
parameter digested on the device, one host copy per step), alternating for `rounds` rounds so that load from
other processes hits both. Reports the median time per step of each and their ratio. Goal: under 1.2x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from probes.replay_example import BATCH, D_MODEL, HEADS, LAYERS, SEQ, build, train_step
from probes.replay_tape import Tape


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _steps(device: str, steps: int, parts: tuple[object, ...], tape: Tape | None) -> list[float]:
    """Seconds per step for `steps` steps, with `tape` installed around them when given."""
    if tape is not None:
        tape.install()
    times = []
    try:
        for _ in range(steps):
            _sync(device)
            start = time.perf_counter()
            train_step(*parts)  # type: ignore[arg-type]
            _sync(device)
            times.append(time.perf_counter() - start)
    finally:
        if tape is not None:
            tape.remove()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--steps", type=int, default=10, help="steps per round and mode")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    parts = build(args.device, "none")
    _steps(args.device, 3, parts, None)  # warm-up: allocator, kernels, AdamW state
    bare: list[float] = []
    hooked: list[float] = []
    records = 0
    for _ in range(args.rounds):
        bare += _steps(args.device, args.steps, parts, None)
        tape = Tape()
        hooked += _steps(args.device, args.steps, parts, tape)
        records = len(tape.records) // args.steps
    b, h = statistics.median(bare), statistics.median(hooked)
    name = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} thread(s)"
    print(f"replay digest overhead: transformer {LAYERS} layers, d_model {D_MODEL}, {HEADS} heads, seq {SEQ}, "
          f"batch {BATCH}, AdamW; {name}; torch {torch.__version__}")
    print(f"{args.rounds} rounds x {args.steps} steps per mode, alternating; {records} tensors digested per step")
    print(f"{'mode':<16}{'median ms/step':>16}{'min ms/step':>14}{'ratio':>8}")
    print(f"{'bare':<16}{b * 1e3:>16.2f}{min(bare) * 1e3:>14.2f}{1.0:>8.2f}")
    print(f"{'replay digests':<16}{h * 1e3:>16.2f}{min(hooked) * 1e3:>14.2f}{h / b:>8.2f}")
    print(f"goal < 1.20x: {'met' if h / b < 1.2 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
