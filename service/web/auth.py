"""Who may see the dashboard: the API's bearer token, or a login cookie derived from it (never the token itself)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response

from cuprobe.service.config import Settings
from cuprobe.service.web.render import page

COOKIE = "cuprobe_session"
# What the cookie is an HMAC of, keyed by the token: changing the token logs every browser out.
_SESSION_MESSAGE = b"cuprobe dashboard session v1"
router = APIRouter(include_in_schema=False)


class LoginRequired(Exception):
    """The request carries neither the token nor a valid login cookie: it gets the login page, never data."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


def bearer_refusal(authorization: str | None, token: str) -> str | None:
    """Why a request with this Authorization header is refused, or None when it carries `token` as its bearer token
    (the API's routes, their outermost gate and the dashboard all judge it here)."""
    if not authorization:
        return "missing bearer token (Authorization: Bearer ...)"
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        return "wrong bearer token"
    return None


def session_value(token: str) -> str:
    """The login cookie's value for `token`: an HMAC-SHA256, so the cookie never holds the token."""
    return hmac.new(token.encode(), _SESSION_MESSAGE, hashlib.sha256).hexdigest()


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def allowed(request: Request) -> bool:
    """Whether the request may read the dashboard: no token configured, the bearer token, or the login cookie."""
    token = _settings(request).api_token
    if token is None:
        return True
    if bearer_refusal(request.headers.get("authorization"), token) is None:
        return True
    cookie = request.cookies.get(COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), session_value(token).encode())


def require_viewer(request: Request) -> None:
    """Dependency of every dashboard page: LoginRequired (the login page, HTTP 401) unless allowed."""
    if not allowed(request):
        said = "that login has expired or the token changed" if request.cookies.get(COOKIE) else ""
        raise LoginRequired(said)


Viewer = Depends(require_viewer)


def _safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this server only (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/ui/"
    return target


def login_page(request: Request, *, message: str = "", status_code: int = 401, target: str | None = None) -> Response:
    """The login form (HTTP 401 by default): it posts the token to /login and comes back to `target`."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return page(
        request,
        "login.html",
        {"next": _safe_next(target or here), "message": message, "token_set": _settings(request).api_token is not None},
        status_code=status_code,
    )


@router.get("/login")
def login_form(request: Request, next: str = "/ui/") -> Response:  # the query parameter's name
    if allowed(request) and _settings(request).api_token is None:
        return RedirectResponse(_safe_next(next), status_code=303)
    return login_page(request, status_code=200, target=next)


def cross_site(request: Request) -> bool:
    """Whether a browser sent this request from another site's page (its Sec-Fetch-Site, else its Origin, says so):
    such a form may not log anyone in or out. A client that sends neither (curl) is no browser to be tricked."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    return origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}"


def _cross_site_refusal() -> Response:
    return PlainTextResponse("refused: a form on another site may not log in or out of this dashboard", 403)


@router.post("/login")
def login(request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/ui/") -> Response:
    """Check the token; on success set the HttpOnly login cookie and go on to `next`, else the form again (401)."""
    if cross_site(request):
        return _cross_site_refusal()
    configured = _settings(request).api_token
    if configured is None:
        return RedirectResponse(_safe_next(next), status_code=303)
    if not token:
        return login_page(request, message="enter the API token", target=next)
    if not hmac.compare_digest(token.encode(), configured.encode()):
        return login_page(request, message="wrong token", target=next)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(
        COOKIE,
        session_value(configured),
        httponly=True,
        samesite="lax",  # a link pasted into a PR still opens logged in; other sites' forms do not carry it
        secure=request.url.scheme == "https",
        max_age=30 * 24 * 3600,
        path="/",
    )
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    if cross_site(request):
        return _cross_site_refusal()
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
