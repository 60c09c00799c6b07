"""GET /health: can the API reach Redis and the store, and which workers answer (open, no token)."""

from __future__ import annotations

import redis
from fastapi import APIRouter, Response, status

from service.api.deps import CeleryDep, SettingsDep, StoreDep
from service.api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/health")
def health(settings: SettingsDep, store: StoreDep, celery: CeleryDep, response: Response) -> Health:
    """200 when Redis and the store answer, 503 otherwise; workers are listed with the queues they serve."""
    try:
        client = redis.Redis.from_url(settings.broker, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        client.close()
        redis_state = "ok"
    except redis.RedisError as exc:
        redis_state = f"unreachable: {exc}"
    try:
        store.ping()
        store_state = "ok"
    except Exception as exc:  # any driver error means the store is unusable
        store_state = f"unreachable: {type(exc).__name__}: {exc}"
    workers: dict[str, list[str]] = {}
    if redis_state == "ok":
        replies = celery.control.inspect(timeout=1.0).active_queues() or {}
        workers = {name: sorted(q["name"] for q in queues) for name, queues in replies.items()}
    ok = redis_state == "ok" and store_state == "ok"
    if not ok:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return Health(ok=ok, redis=redis_state, store=store_state, workers=workers)
