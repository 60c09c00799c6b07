"""FastAPI dependencies: settings, store, Celery app and bearer-token auth, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from celery import Celery
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.web.auth import bearer_refusal

bearer = HTTPBearer(auto_error=False)


def app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def get_celery(request: Request) -> Celery:
    return request.app.state.celery


SettingsDep = Annotated[Settings, Depends(app_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
CeleryDep = Annotated[Celery, Depends(get_celery)]


def require_token(
    settings: SettingsDep,
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """Bearer-token check when a token is configured (create_app insists on one when `command` is enabled).
    `credentials` declares the scheme in OpenAPI; the header itself is judged by bearer_refusal, as everywhere."""
    if settings.api_token is None:
        return
    if (why := bearer_refusal(request.headers.get("authorization"), settings.api_token)) is not None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, why, headers={"WWW-Authenticate": "Bearer"})


Authorized = Depends(require_token)
