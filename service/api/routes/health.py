"""GET /health: ok or not for anyone (cheap, bounded, cached); Redis, store and worker details behind the token."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.security import HTTPAuthorizationCredentials

from cuprobe.service.api.deps import SettingsDep, StoreDep, bearer
from cuprobe.service.api.schemas import Health, HealthBrief
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.web.auth import bearer_refusal

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HealthSnapshot:
    health: Health
    taken_at: float


class HealthCache:
    """One health check per `registry_refresh_s`, shared by every caller: a burst costs one Redis read (bounded
    by `registry_timeout_s`) and one store query, never a connection per request."""

    def __init__(self, settings: Settings, store: Store, registry: WorkerRegistry) -> None:
        self.settings, self.store, self.registry = settings, store, registry
        self._lock = threading.Lock()
        self._snapshot: HealthSnapshot | None = None

    def get(self) -> Health:
        with self._lock:
            snap = self._snapshot
            if snap is None or time.monotonic() - snap.taken_at >= self.settings.registry_refresh_s:
                snap = self._snapshot = HealthSnapshot(self._check(), time.monotonic())
            return snap.health

    def _check(self) -> Health:
        view = self.registry.view()
        try:
            busy = self.store.busy_queues()
            if self.store.writes.failed is not None:  # reads answer while writes may not: try one again
                with contextlib.suppress(Exception):
                    self.store.try_write()
            failed = self.store.writes.failed
            store_state = "ok" if failed is None else f"writes failing: {failed}"
        except Exception as exc:  # any driver error means the store is unusable
            log.warning("health: store unreachable: %s", exc)
            busy, store_state = set(), f"unreachable: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        served = view.served_queues or set()
        unserved = sorted(busy - served)
        redis_state = "ok" if view.error is None else f"unreachable: {view.error}"
        return Health(
            ok=view.error is None and store_state == "ok" and not unserved,
            redis=redis_state,
            store=store_state,
            workers={w.name: w.queues for w in view.workers},
            unserved_queues=unserved,
            registry=[w.model_dump() for w in view.workers],
        )


def get_health_cache(request: Request) -> HealthCache:
    cache: HealthCache = request.app.state.health
    return cache


def _may_see_details(settings: Settings, request: Request) -> bool:
    """Whether /health may show its parts: no token configured (every route is open to whoever reaches the API,
    127.0.0.1 by default), or the request carries the token, judged as every route judges it."""
    token = settings.api_token
    return token is None or bearer_refusal(request.headers.get("authorization"), token) is None


@router.get("/health", response_model=Health | HealthBrief)
def health(
    settings: SettingsDep,
    _store: StoreDep,
    cache: Annotated[HealthCache, Depends(get_health_cache)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],  # the scheme, in OpenAPI
    request: Request,
    response: Response,
) -> Health | HealthBrief:
    """200 when Redis and the store answer (its writes too: a write that failed is tried again until one works) and
    every queue holding jobs has a live worker, else 503. Without the
    token only `ok` is said; with it, each part and the workers (queues, GPU, last heartbeat)."""
    found = cache.get()
    if not found.ok:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return found if _may_see_details(settings, request) else HealthBrief(ok=found.ok)
