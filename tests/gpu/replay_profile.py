"""Where replay's per-step time goes on a GPU: the example transformer's step under cProfile, bare and with the tape.

    python3 tests/gpu/replay_profile.py [--device cuda] [--steps 40] [--output-grads retain|hooks|none]

Prints, for the bare step and for the step with replay's tape installed, the functions with the most own time
(cProfile inflates Python-heavy code, so read the shares, not the absolute times), and the per-step wall time of
the tape's parts: global hooks that do nothing (torch's own dispatch), the tape's hooks recording nothing, records
without digests, and the full tape — all with the tape's `output_grads` setting.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
import torch.nn.modules.module as module_hooks

from cuprobe.probes.replay.example import build, train_step
from cuprobe.probes.replay.tape import Tape


class NoOp:
    """Global forward hooks (before and after) that do nothing: torch's own cost of calling hooks per module."""

    def __init__(self) -> None:
        self.handles: list[Any] = []

    def install(self) -> None:
        self.handles = [module_hooks.register_module_forward_pre_hook(lambda m, i: None),
                        module_hooks.register_module_forward_hook(lambda m, i, o: None)]

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


class Dispatch(Tape):
    """The global hooks installed, nothing recorded: what the hook dispatch alone costs."""

    def _record(self, phase: str, path: str, role: str, tensor: torch.Tensor) -> None:
        return None

    def _record_all(self, phase: str, names: list[tuple[str, str]], tensors: list[torch.Tensor],
                    checked: bool = False) -> None:
        return None


def steps(parts: tuple[Any, ...], tape: Tape | NoOp | None, n: int, device: str) -> list[float]:
    out = []
    if tape is not None:
        tape.install()
    try:
        for _ in range(n):
            if device == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            train_step(*parts)
            if device == "cuda":
                torch.cuda.synchronize()
            out.append(time.perf_counter() - t)
    finally:
        if tape is not None:
            tape.remove()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--output-grads", default="none", choices=["retain", "hooks", "none"])
    args = parser.parse_args()
    torch.manual_seed(0)
    parts = build(args.device, "none")
    grads = args.output_grads
    modes: dict[str, Callable[[], Tape | NoOp | None]] = {
        "bare": lambda: None,
        "no-op global hooks": NoOp,
        "dispatch only": lambda: Dispatch(output_grads=grads),
        "records, no digests": lambda: Tape(output_grads=grads, digests=False),
        "full tape": lambda: Tape(output_grads=grads),
    }
    print(f"output_grads = {grads}; {torch.cuda.get_device_name() if args.device == 'cuda' else 'CPU'}")
    tapes = {name: make() for name, make in modes.items()}
    for tape in tapes.values():
        steps(parts, tape, 3, args.device)
    times: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(args.steps):
        for name, tape in tapes.items():
            times[name] += steps(parts, tape, 1, args.device)
    bare = statistics.median(times["bare"])
    print(f"{'mode':<22}{'median ms':>10}{'ratio':>8}")
    for name, samples in times.items():
        print(f"{name:<22}{statistics.median(samples) * 1e3:>10.2f}{statistics.median(samples) / bare:>8.2f}")
    for name in ("bare", "full tape"):
        prof = cProfile.Profile()
        tape = modes[name]()
        prof.enable()
        steps(parts, tape, args.steps, args.device)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        print(f"\n== cProfile, {name}, {args.steps} steps (own time)")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
