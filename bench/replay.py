"""replay's digest overhead per training step, against the bare program, on the built-in small transformer.

    python bench/replay.py [--device cpu|cuda] [--steps 10] [--rounds 5] [--threads N]

CI runs it at `--device cpu --steps 1 --rounds 1 --threads 1` (tests/unit/test_bench_smoke.py).

One process: the model (2 layers, d_model 256, 4 heads, sequence 128, batch 8, AdamW) trains `rounds` x `steps`
steps in each mode — bare, and with replay's hooks installed (every module output, parameter gradient and
parameter digested) — one step of each mode after the other, so that load from other processes hits every mode
alike. On the CPU replay digests each tensor when it is recorded; on a GPU it batches them (one host copy
per step; with Triton, one kernel per dtype reads the tensors where they lie, and the `staging` rows time the same
tapes through the staging buffer instead); on the CPU the batched path is timed too (`replay, batched`).
`hooks only` records every tensor without digesting it: the cost of the hooks alone. `output grads, retain` also
digests the gradients of module outputs, kept by autograd until the optimizer step (`output_grads: retain`), and
`output grads, hooks` takes them through a Python hook per output (`output_grads: hooks`); `replay digests` is the
default (`output_grads: none`: module outputs, parameter gradients and parameters).
Reports the median wall time per step of each mode and its ratio
to the bare program (the goal: under 1.2x for `replay digests`); on the CPU also the median process CPU time per step
and its ratio, which other processes on a shared machine disturb far less than the wall time (with `--threads 1`:
with more threads, waiting threads may spin and count as CPU time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from cuprobe.probes.replay import batch as replay_batch
from cuprobe.probes.replay import triton as replay_triton
from cuprobe.probes.replay.example import BATCH, D_MODEL, HEADS, LAYERS, SEQ, build, train_step
from cuprobe.probes.replay.tape import Tape


def hooks_only() -> Tape:
    """Replay's hooks and records without digests: what the hooks alone cost."""
    return Tape(digests=False)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _step(device: str, parts: tuple[object, ...], tape: Tape | None, staging: bool = False) -> tuple[float, float]:
    """(wall, process CPU) seconds of one training step, with `tape` installed around it when given; `staging`:
    the GPU digests go through the staging buffer, not the Triton kernel."""
    replay_triton.USE = not staging
    if tape is not None:
        tape.install()
    try:
        _sync(device)
        wall, cpu = time.perf_counter(), time.process_time()
        train_step(*parts)  # type: ignore[arg-type]
        _sync(device)
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        if tape is not None:
            tape.remove()
        replay_triton.USE = True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    parser.add_argument("--steps", type=int, default=10, help="steps per round and mode")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/replay.py: --device cuda, but torch sees no CUDA device", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    parts = build(args.device, "none")
    modes: dict[str, Callable[[], Tape | None]] = {
        "bare": lambda: None, "hooks only": hooks_only, "replay digests": Tape,
        "output grads, retain": lambda: Tape(output_grads="retain"),
        "output grads, hooks": lambda: Tape(output_grads="hooks"),
    }
    if args.device == "cpu":
        modes["replay, batched"] = lambda: Tape(batch_cpu=True)
    staged = set()
    if args.device == "cuda" and replay_triton.available():  # the same two modes with the staging path's digests
        modes["replay, staging"] = Tape
        modes["retain, staging"] = lambda: Tape(output_grads="retain")
        staged = {"replay, staging", "retain, staging"}
    tapes = {name: make() for name, make in modes.items()}
    for _ in range(3):  # warm-up: allocator, kernels, AdamW state, staging buffers
        for name, tape in tapes.items():
            _step(args.device, parts, tape, name in staged)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
    for _ in range(args.rounds * args.steps):  # mode after mode, step by step: load from elsewhere hits them alike
        for name, tape in tapes.items():
            times[name].append(_step(args.device, parts, tape, name in staged))
    replay_batch.PATHS.clear()
    for name, tape in tapes.items():  # which path the timed tapes' batches took (the staging rows: by design)
        if name not in staged and name != "bare":
            _step(args.device, parts, tape)
    paths = dict(replay_batch.PATHS)
    digested = tapes["replay digests"]
    assert digested is not None
    records = len(digested.records) // (args.rounds * args.steps + 4)  # 3 warm-up steps, 1 after
    if records == 0:
        print("bench/replay.py: the `replay digests` tape recorded no tensor: nothing was measured", file=sys.stderr)
        return 1
    cpu_time = args.device == "cpu"  # on a GPU the process waits for the device: its CPU time says little
    bare = statistics.median(w for w, _ in times["bare"])
    bare_cpu = statistics.median(c for _, c in times["bare"])
    name = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} thread(s)"
    print(f"replay digest overhead: transformer {LAYERS} layers, d_model {D_MODEL}, {HEADS} heads, seq {SEQ}, "
          f"batch {BATCH}, AdamW; {name}; torch {torch.__version__}")
    print(f"{args.rounds} x {args.steps} steps per mode, modes alternating step by step; {records} tensors digested "
          "per step")
    if args.device == "cuda":
        why = replay_triton.FAILED or "no Triton"
        how = "Triton kernel" if replay_triton.available() else f"staging buffer ({why})"
        print(f"GPU digests: {how}; the `staging` rows take the staging buffer; batches of one more step of the"
              f" other modes, per path: {paths}")
    header = f"{'mode':<24}{'median ms/step':>16}{'min ms/step':>14}{'ratio':>8}"
    print(header + (f"{'CPU ms/step':>14}{'CPU ratio':>11}" if cpu_time else ""))
    for mode, samples in times.items():
        median = statistics.median(w for w, _ in samples)
        line = f"{mode:<24}{median * 1e3:>16.2f}{min(w for w, _ in samples) * 1e3:>14.2f}{median / bare:>8.2f}"
        if cpu_time:
            cpu = statistics.median(c for _, c in samples)
            line += f"{cpu * 1e3:>14.2f}{cpu / bare_cpu:>11.2f}"
        print(line)
    ratio = statistics.median(w for w, _ in times["replay digests"]) / bare
    print(f"goal < 1.20x: {'met' if ratio < 1.2 else 'MISSED'} ({ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
