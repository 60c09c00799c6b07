"""Warm starts: spare probe processes, started under the sanitizer before their run is known.

Most of a short sanitizer run is its start-up: the sanitizer attaching, Python and torch imports, the CUDA context
under instrumentation (docs/sweep.md). A spare is the exact sanitizer command of an earlier run of the same kind
(probe, tool, options, backtraces, environment), whose target gets ready (probes/warm.py) and then waits for its
parameters on a FIFO. The runner hands the next matching run to it instead of starting a fresh process; the spare
runs that one request and exits, so every run still has a process, a sanitizer session and an XML file of its own.

A spare waits until the run that asked for it has begun its cases (or a short while), so spares do not queue in
the driver with the start-ups of the runs they are meant to follow. The pool starts spares from one long-lived
thread: a spare dies with the thread that started it (PR_SET_PDEATHSIG), and with the pool when it is closed.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuprobe.probes.warm import READY_NAME, WarmLevel
from cuprobe.service.probing.handover import FIFO_NAME, HAND_OVER_LOOK_S, params_at, waiting_for_params
from cuprobe.service.probing.planned import PlannedRun
from cuprobe.service.sanitizer.supervise import Started

if TYPE_CHECKING:
    from cuprobe.probes.base import Probe

# How long a spare waits for its run's first case before it starts anyway.
FOLLOW_AFTER_S = 20.0
# How often the starter thread looks at what it was asked to start.
LOOK_S = 0.05

Key = tuple[object, ...]


@dataclass
class Spare:
    """A started sanitizer process whose target waits for its parameters; its files are in its own folder."""

    key: Key
    planned: PlannedRun  # planned in the spare's folder: its XML, result, heartbeat and port block
    fifo: Path
    started: Started

    def alive(self) -> bool:
        return self.started.proc.poll() is None

    def ready(self) -> bool:
        """Its warm-up is done: it waits for parameters."""
        return (self.planned.workdir / READY_NAME).exists()

    def discard(self) -> None:
        self.started.kill()
        if self.planned.ports is not None:
            self.planned.ports.release()
        shutil.rmtree(self.planned.workdir, ignore_errors=True)


def warm_level(planned: PlannedRun) -> WarmLevel:
    return level_of(planned.admitted.probe, planned.admitted.model)


def level_of(probe: Probe[Any], model: Any) -> WarmLevel:
    """How far a spare for `probe` with these parameters gets ready: torch imported, the CUDA context, or the import."""
    if probe.uses_torch(model):
        return "torch"
    return "gpu" if probe.gpu_needed(model) else "import"


def warm_key(planned: PlannedRun) -> Key | None:
    """What a spare must share with a run to take it (the command and environment, less the run's own folder,
    parameters and ports); None for runs that never warm-start (bare runs; probes that run the user's code)."""
    if planned.sanitizer is None or not planned.admitted.probe.warms:
        return None
    folder = str(planned.workdir)
    cmd = [part.replace(folder, "{dir}") for part in planned.cmd]
    cmd[params_at(cmd)] = "{params}"
    for flag in ("--port", "--max-connections"):
        if flag in cmd:
            cmd[cmd.index(flag) + 1] = "{port}"
    env = tuple(sorted((name, value.replace(folder, "{dir}")) for name, value in planned.env.items()))
    return (tuple(cmd), env, warm_level(planned))


def params_json(planned: PlannedRun) -> str:
    """The parameters exactly as the planned (cold) command carries them: what a spare is handed instead."""
    return planned.cmd[params_at(planned.cmd)]


def spare_command(planned: PlannedRun) -> list[str]:
    """The planned command, waiting for its parameters (waiting_for_params) in its folder's FIFO."""
    return waiting_for_params(planned.cmd, planned.workdir / FIFO_NAME, warm_level(planned))


Start = Callable[[Callable[[], Spare | None]], Spare | None]


def _plain(make: Callable[[], Spare | None]) -> Spare | None:
    return make()


class Spares:
    """Spare processes by key. `size`: at most this many alive (the oldest goes); `budget`: at most this many ever
    started (None: no limit), so a sweep that knows how many runs are left starts no spare it cannot use.
    `idle_s`: a spare not taken within this long of the pool's last use (a take, an ask, `touch`) is
    ended (None: kept until the pool closes). `start`: how the starter thread calls a spare's `make` (a GPU
    worker's holds the GPU lock around it: service/worker/warm.py). `take_wait_s`: how long `take` waits for a
    spare asked for its key that is still being started (a worker's next job can come before the spare its last
    job asked for has been started)."""

    def __init__(
        self,
        root: Path,
        size: int,
        budget: int | None = None,
        idle_s: float | None = None,
        start: Start = _plain,
        take_wait_s: float = 0.0,
    ) -> None:
        self.root, self.size, self.budget, self.idle_s, self._starts = root, max(1, size), budget, idle_s, start
        self.take_wait_s = take_wait_s
        self._ready: list[Spare] = []
        self._asked: list[tuple[Callable[[], Spare | None], Callable[[], bool], float, Key | None]] = []
        self._making: list[Key | None] = []  # the keys of the spares being started now
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self.taken = self.idled = 0
        self._used = time.monotonic()
        self._thread = threading.Thread(target=self._starter, name="cuprobe-spares", daemon=True)
        self._thread.start()

    def take(self, key: Key) -> Spare | None:
        """A live spare started for `key` (the oldest), or None; waits up to `take_wait_s` for one asked for `key`
        that is still being started."""
        deadline = time.monotonic() + self.take_wait_s
        while True:
            with self._lock:
                self._used = time.monotonic()
                for spare in list(self._ready):
                    if spare.key != key:
                        continue
                    self._ready.remove(spare)
                    if spare.alive():
                        self.taken += 1
                        return spare
                    _discard_later(spare)
                coming = key in self._making or any(asked[3] == key for asked in self._asked)
            if not coming or time.monotonic() >= deadline:
                return None
            time.sleep(HAND_OVER_LOOK_S)

    def ask(self, make: Callable[[], Spare | None], after: Callable[[], bool], key: Key | None = None) -> bool:
        """Start a spare with `make` once `after()` holds (or FOLLOW_AFTER_S passed); False when the budget is spent.
        `key`: the key the spare will have, where the caller knows it (a `take` for it waits while it starts)."""
        with self._lock:
            if self._closed or (self.budget is not None and self.budget <= 0):
                return False
            if self.budget is not None:
                self.budget -= 1
            self._used = time.monotonic()
            self._asked.append((make, after, self._used + FOLLOW_AFTER_S, key))
        self._wake.set()
        return True

    def touch(self) -> None:
        """The pool was used now (a run ended): its idle spares' time counts from here."""
        with self._lock:
            self._used = time.monotonic()

    def alive(self) -> int:
        """How many spares are started and not yet taken or ended."""
        with self._lock:
            return sum(1 for s in self._ready if s.alive())

    def wait_ready(self, count: int, timeout_s: float) -> int:
        """Wait until `count` spares are ready, `timeout_s` passed, or no more can come; how many are ready."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                ready = sum(1 for s in self._ready if s.ready())
                warming = sum(1 for s in self._ready if s.alive() and not s.ready())
                coming = len(self._asked) + len(self._making) + warming
            if ready >= count or not coming or time.monotonic() > deadline:
                return ready
            time.sleep(LOOK_S)

    def close(self) -> None:
        """Stop starting spares and end every spare not taken."""
        with self._lock:
            self._closed = True
            self._asked.clear()
        self._wake.set()
        self._thread.join(timeout=30)
        with self._lock:
            left, self._ready = self._ready, []
        for spare in left:
            spare.discard()

    def _starter(self) -> None:
        while True:
            self._wake.wait(LOOK_S)
            self._wake.clear()
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                due = [a for a in self._asked if a[2] <= now or _holds(a[1])]
                self._asked = [a for a in self._asked if a not in due]
                self._making += [a[3] for a in due]
                idle = self.idle_s is not None and now - self._used > self.idle_s and not self._asked
                if idle and self._ready:
                    self.idled += len(self._ready)
                    for spare in self._ready:
                        _discard_later(spare)
                    self._ready = []
            for make, _, _, key in due:
                try:
                    self._start(make)
                finally:
                    with self._lock:
                        self._making.remove(key)

    def _start(self, make: Callable[[], Spare | None]) -> None:
        try:
            spare = self._starts(make)
        except Exception:  # a spare is an optimisation: its run starts cold instead
            return
        if spare is None:
            return
        with self._lock:
            if self._closed:
                _discard_later(spare)
                return
            self._ready.append(spare)
            while len(self._ready) > self.size:
                _discard_later(self._ready.pop(0))


def _holds(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except Exception:  # a check that fails lets the spare start
        return True


def _discard_later(spare: Spare) -> None:
    """End a spare without holding up the caller (killing waits up to the grace period)."""
    threading.Thread(target=spare.discard, name="cuprobe-spare-discard", daemon=True).start()
