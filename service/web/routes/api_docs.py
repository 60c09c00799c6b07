"""The HTTP API described from the app's own OpenAPI schema, rendered here: no script or style from a CDN, so the
page reads the same on a machine without internet (FastAPI's /docs page loads Swagger UI from one)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from cuprobe.service.web.render import page

router = APIRouter(prefix="/ui/api", include_in_schema=False)  # open, as /openapi.json is: no data, only the API
METHODS = ("get", "post", "put", "patch", "delete")


def endpoints(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Each operation of `schema`: method, path, summary, description, its parameters and request body."""
    out = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            out.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "parameters": [
                        {
                            "name": p["name"],
                            "where": p.get("in", ""),
                            "required": p.get("required", False),
                            "description": p.get("description") or p.get("schema", {}).get("description", ""),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "body": str(body.get("$ref", "")).rsplit("/", 1)[-1] or body.get("type", ""),
                    "responses": sorted(op.get("responses", {})),
                }
            )
    return out


@router.get("", response_class=HTMLResponse)
def api_page(request: Request) -> HTMLResponse:
    schema = request.app.openapi()
    return page(request, "api.html", {"endpoints": endpoints(schema), "info": schema.get("info", {})})
