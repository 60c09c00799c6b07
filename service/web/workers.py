"""The workers the dashboard shows: live ones from the cached worker registry, and those seen earlier and gone."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from cuprobe.service.queue.registry import WorkerBeat, WorkerRegistry

# A worker gone longer than this is no longer listed.
FORGET_AFTER_S = 24 * 3600.0


@dataclass(frozen=True)
class WorkerRow:
    """One worker: its last heartbeat, and whether that heartbeat is still live."""

    beat: WorkerBeat
    alive: bool
    beat_age_s: float


class Roster:
    """Reads the registry through its cache (one Redis read per refresh interval, whoever asks) and remembers the
    workers this API process has seen, so one that stopped beating shows as gone instead of vanishing."""

    def __init__(self, registry: WorkerRegistry) -> None:
        self.registry = registry
        self._seen: dict[str, WorkerBeat] = {}
        self._lock = threading.Lock()

    def rows(self) -> tuple[list[WorkerRow], str | None]:
        """Every live worker and every worker seen before that is gone, live first; and the registry's error."""
        view = self.registry.view()
        now = time.time()
        with self._lock:
            if view.error is None:
                for beat in view.workers:
                    self._seen[beat.name] = beat
            live = {b.name for b in view.workers} if view.error is None else set()
            for name in [n for n, b in self._seen.items() if n not in live and now - b.beat_at > FORGET_AFTER_S]:
                del self._seen[name]
            beats = dict(self._seen)
        rows = [WorkerRow(b, b.name in live, max(0.0, now - b.beat_at)) for b in beats.values()]
        rows.sort(key=lambda r: (not r.alive, r.beat.name))
        return rows, view.error
