"""Warm re-runs: the confirmation's bare re-run processes, started and ready before their run is known.

A bare re-run's time is mostly its start — the interpreter, imports, pycuda, a CUDA context: 1.1-1.7 s of its
2.8-3.5 s on the H100 — and those starts land on the GPU that a sweep's sanitizer
processes share. A caller that keeps a pool between runs (bench/sweep.py, as it keeps the sanitizer spares of
service/probing/spares.py: a runner warm from its last run of this kind) has the four started before its next sweep:
each gets ready (probes/warm.py: imports and the CUDA context) and waits for its parameters on a FIFO, and from there
it is exactly a cold re-run's command — the same probe code, poison and `--watch all`, one process per re-run.

Only the re-runs that watch every buffer (the early ones, started beside the sanitizer run) are taken warm; a re-run
that watches chosen buffers, or finds no ready process of its probe and poison, starts cold as before. A warm process
dies with the thread that started it, so `prepare` is called from a thread that outlives them (bench/sweep.py: its
main thread); `close` ends those nobody took.

Measured on an H100: made before the sanitizer processes' spares (or
while they start), slower than cold re-runs — the sweep took about 1 s more; made once the spares are ready, no
slower, and over three calls a little faster. Either way a warm re-run ran its cases about three times slower than a
cold one, cause not found. So a caller makes the pool after its spares are ready (bench/sweep.py does, by default);
`cuprobe sweep run` and the GPU workers keep none. `after_s` holds a taken re-run back (an experiment).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.probing.confirm.decide import POISON_RUNS
from cuprobe.service.probing.confirm.reruns import RERUN_NICE, WarmRerun, rerun_command, rerun_environment
from cuprobe.service.probing.environment import PROJECT_ROOT
from cuprobe.service.probing.handover import FIFO_NAME, waiting_for_params
from cuprobe.service.sanitizer.supervise import start

RESULT_NAME = "result.json"


def warm_command(probe: str, mode: str, folder: Path, python: str | None) -> list[str]:
    """A cold early re-run's command (it watches every buffer), waiting in `folder` for its parameters after making
    its CUDA context."""
    cold = rerun_command(probe, {}, folder / RESULT_NAME, mode, None, python)
    return waiting_for_params(cold, folder / FIFO_NAME, "gpu")


class RerunPool:
    """Warm re-runs a caller keeps between runs, one per (probe, poison mode) asked for."""

    def __init__(self, root: Path, settings: Settings, after_s: float = 0.0) -> None:
        self.root, self.settings = root, settings
        # How long a taken re-run waits before it gets its parameters (0: at once, beside the sweep's first cases).
        self.after_s = after_s
        self._lock = threading.Lock()
        self._held: list[WarmRerun] = []
        self.taken = 0  # re-runs handed out warm, over the pool's life

    def prepare(self, probe: str, runs: tuple[tuple[str, str], ...] = POISON_RUNS) -> None:
        """Start one warm re-run per entry of `runs` (label, mode) beyond those already held for `probe`."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock:
            held = [(w.probe, w.mode) for w in self._held if w.alive()]
        wanted = [mode for _, mode in runs]
        for mode in wanted:
            if (probe, mode) in held:
                held.remove((probe, mode))
                continue
            folder = Path(tempfile.mkdtemp(prefix=f"rerun-{mode}-", dir=self.root))
            os.mkfifo(folder / FIFO_NAME, 0o600)
            settings = self.settings
            started = start(
                warm_command(probe, mode, folder, settings.python),
                max_output_bytes=settings.max_output_bytes,
                env=rerun_environment(settings),
                cwd=PROJECT_ROOT,
                nice=RERUN_NICE,
            )
            with self._lock:
                self._held.append(WarmRerun(probe, mode, folder, started))

    def wait_ready(self, timeout_s: float) -> int:
        """Wait until every held re-run is ready (or dead, or `timeout_s` passed); how many are ready."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                held = list(self._held)
            if all(w.ready() or not w.alive() for w in held) or time.monotonic() > deadline:
                return sum(1 for w in held if w.ready() and w.alive())
            time.sleep(0.05)

    def take(self, probe: str, mode: str) -> WarmRerun | None:
        """A live re-run of `probe` under `mode` (ready or still getting ready), now the caller's; None if none."""
        with self._lock:
            for i, warm in enumerate(self._held):
                if warm.probe == probe and warm.mode == mode and warm.alive():
                    self.taken += 1
                    return self._held.pop(i)
        return None

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, []
        for warm in held:
            warm.discard()
