"""Wall time per stage of producing one result (the runner's and the worker's), kept with the result."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

# The stages, in the order a worker's job passes through them (a result carries those it went through):
# worker: claim (compare-and-set in the store), load (the request the claim read, validated), gpu_lock (the GPU slot);
# runner: prepare (admission, sanitizer preflight, the command and its environment), spawn (fork and exec of the
# supervised command), run (until it exited, as seen by the supervisor), reap (its leftover processes and output
# pipes), artifacts (stdout, stderr, exit code, result.json written, scrubbed and read), parse (the XML and the
# summary line), classify (outcome, findings, fingerprint), confirm (the bare re-runs of initcheck findings),
# scrub (secrets out of the result); worker again: pending (the result written beside the artifacts).
# Storing the result is not in it (the result is what is stored): its row's finished_at is when storing began.
STAGES = (
    "claim",
    "load",
    "gpu_lock",
    "prepare",
    "spawn",
    "run",
    "reap",
    "artifacts",
    "parse",
    "classify",
    "confirm",
    "scrub",
    "pending",
)


class Stages:
    """Seconds spent per named stage; a stage entered twice adds up."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + max(seconds, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def rounded(self) -> dict[str, float]:
        """Every stage to the tenth of a millisecond, in STAGES order (unknown names last)."""
        order = {name: i for i, name in enumerate(STAGES)}
        names = sorted(self.seconds, key=lambda n: order.get(n, len(order)))
        return {name: round(self.seconds[name], 4) for name in names}
