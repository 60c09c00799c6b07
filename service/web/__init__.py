"""The web dashboard: server-rendered pages (Jinja2, htmx for live parts) served by the API process under /ui."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from cuprobe.service.web.auth import LoginRequired, login_page
from cuprobe.service.web.auth import router as auth_router
from cuprobe.service.web.pages import PageNotFound
from cuprobe.service.web.render import STATIC, page
from cuprobe.service.web.routes import api_docs, findings, jobs, now, sweeps
from cuprobe.service.web.routes.now import DiffCounts
from cuprobe.service.web.routes.sweeps import PlotCache
from cuprobe.service.web.workers import Roster

__all__ = ["install"]


async def _login_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequired)
    return login_page(request, message=exc.message)


async def _not_found(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PageNotFound)
    return page(request, "missing.html", {"message": exc.message, "status": exc.status}, status_code=exc.status)


def install(app: FastAPI) -> None:
    """Serve the dashboard from `app` (the API): pages under /ui, /login and /logout, static files, / -> /ui/."""
    app.state.roster = Roster(app.state.registry)
    app.state.diff_counts, app.state.plots = DiffCounts(), PlotCache()
    app.add_exception_handler(LoginRequired, _login_required)
    app.add_exception_handler(PageNotFound, _not_found)
    app.include_router(auth_router)
    for module in (now, jobs, findings, sweeps, api_docs):
        app.include_router(module.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @app.get("/docs", include_in_schema=False)
    def docs() -> RedirectResponse:
        """FastAPI's own page loads Swagger UI from a CDN (blank offline): the dashboard's page instead."""
        return RedirectResponse("/ui/api", status_code=307)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        """Browsers ask for it on every page; the dashboard's icon."""
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")
