"""The FastAPI application: routes, error bodies that name the bad field, body-size cap, reconciler."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

import cuprobe
from cuprobe.service.api.headers import SecurityHeaders
from cuprobe.service.api.limits import BodySizeLimit
from cuprobe.service.api.routes import findings, health, jobs, probes, sweeps
from cuprobe.service.api.routes.health import HealthCache
from cuprobe.service.api.schemas import ErrorBody
from cuprobe.service.api.timing import ServerTiming
from cuprobe.service.api.token_gate import TokenGate
from cuprobe.service.config import Settings, get_settings
from cuprobe.service.db.store import Store
from cuprobe.service.queue.celery_app import make_celery
from cuprobe.service.queue.ended import EndAnnouncer, EndListener
from cuprobe.service.queue.reconciler import ReconcilerThread
from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.queue.served import ServedQueues, after_grace, served_reader
from cuprobe.service.removed_settings import refuse_removed
from cuprobe.service.web import install as install_dashboard

log = logging.getLogger(__name__)


def _field_of(loc: Any) -> str:
    parts = [str(part) for part in loc if part not in ("body", "query", "path")]
    return ".".join(parts) or "body"


def _described(error: dict[str, Any]) -> tuple[str, str]:
    """(field, message) of one validation error. A body that is not JSON is located by character, not by field:
    FastAPI gives `("body", position)` and keeps the decoder's reason in `ctx`."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error") or "JSON decode error"
        where = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
        return "body", f"not valid JSON: {reason}{where}"
    return _field_of(loc), str(error.get("msg"))


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [dict(e) for e in exc.errors()]
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    field, message = _described(first)
    if tuple(first.get("loc", ())) == ("body",) and isinstance(first.get("input"), bytes):
        # FastAPI reads only a JSON content type as JSON: anything else arrives as bytes
        sent = request.headers.get("content-type") or "none"
        message = f"send the body as JSON with content-type application/json (content-type was {sent})"
    detail = [
        {"field": f, "message": m, "type": str(e.get("type"))} for e in errors for f, m in [_described(e)]
    ]
    body = ErrorBody(error=f"invalid request: {field}: {message}", field=field, detail=detail)
    return JSONResponse(body.model_dump(), status_code=422)


def _unreadable_body(exc: StarletteHTTPException) -> str | None:
    """Why a body FastAPI could not parse (its 400 names no reason; the decoder's exception is its cause)."""
    cause = exc.__cause__
    if exc.status_code != 400 or cause is None:
        return None
    if isinstance(cause, UnicodeDecodeError):
        return f"not UTF-8: byte 0x{cause.object[cause.start]:02x} at position {cause.start}"
    if isinstance(cause, RecursionError):
        return "nested too deeply"
    return None


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if (reason := _unreadable_body(exc)) is not None:
        body = ErrorBody(error=f"invalid request: body: not valid JSON: {reason}", field="body")
        return JSONResponse(body.model_dump(), status_code=422)
    if isinstance(exc.detail, dict):
        body = ErrorBody(error=f"{exc.detail['field']}: {exc.detail['message']}", field=exc.detail["field"])
    else:
        body = ErrorBody(error=str(exc.detail))
    return JSONResponse(body.model_dump(), status_code=exc.status_code, headers=exc.headers)


async def _store_error(_request: Request, exc: Exception) -> JSONResponse:
    """503 when the store is down or locked past its timeout (retry later); 500 when it refused the request."""
    log.error("store error: %s", exc)
    if isinstance(exc, OperationalError | InterfaceError | SQLAlchemyTimeoutError):
        body = ErrorBody(error=f"the store is unavailable ({type(exc).__name__}); try again shortly")
        return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "5"})
    return JSONResponse(ErrorBody(error=f"the store refused the request ({type(exc).__name__})").model_dump(), 500)


async def _internal_error(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(ErrorBody(error=f"internal error ({type(exc).__name__})").model_dump(), status_code=500)


def create_app(
    settings: Settings | None = None, *, reconciler: bool = True, served_queues: ServedQueues | None = None
) -> FastAPI:
    """The API for `settings`; refuses to build when a probe that runs code (command, replay) is on without a token.

    `served_queues` says which queues live workers serve (the worker registry by default): a job for a queue
    none serves is answered `unavailable` at once, after `unserved_grace_s` of start-up.
    """
    refuse_removed()  # the process's environment, even where the caller brings its own settings
    settings = settings or get_settings()
    if (settings.command_enabled or settings.replay_probe_enabled) and not settings.api_token:
        raise ValueError(
            "the command or replay probe is enabled: set CUPROBE_API_TOKEN so only token holders can run code"
        )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(settings.database, timeout_s=settings.store_timeout_s)
    store.migrate()
    celery = make_celery(settings)
    registry = WorkerRegistry(settings)
    ended = EndListener(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        thread = ReconcilerThread(settings, store, celery, registry) if reconciler else None
        if thread:
            thread.start()
        yield
        if thread:
            thread.stopped.set()
        ended.stop()

    app = FastAPI(
        title="cuprobe",
        version=cuprobe.__version__,
        lifespan=lifespan,
        description="Sanitizer-driven correctness service for GPU kernels",
        docs_url=None,  # Swagger UI and ReDoc load from a CDN: the dashboard serves /ui/api (and /docs leads there)
        redoc_url=None,
    )
    app.state.settings, app.state.store, app.state.celery = settings, store, celery
    app.state.registry, app.state.health = registry, HealthCache(settings, store, registry)
    app.state.ended, app.state.announce = ended, EndAnnouncer(settings)
    app.state.served_queues = after_grace(served_queues or served_reader(registry), settings.unserved_grace_s)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(SQLAlchemyError, _store_error)
    app.add_exception_handler(Exception, _internal_error)
    for module in (jobs, probes, health, sweeps, findings):
        app.include_router(module.router)
    install_dashboard(app)
    app.add_middleware(BodySizeLimit, limit=settings.max_request_bytes)
    app.add_middleware(ServerTiming)
    app.add_middleware(TokenGate, token=settings.api_token)  # runs before the body is read
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, the gate's 401s included
    return app
