"""`/docs` (Swagger UI) and `/redoc`, served with no network access: their JavaScript, CSS and
icon come from the `fastapi-offline` package's static folder, not from a CDN."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, HTTPException, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

STATIC = "/docs-static"
#: the assets served, and their media types
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json", title="trajhub API",
        swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{STATIC}/favicon.png")


@router.get("/redoc")
async def redoc() -> HTMLResponse:
    return get_redoc_html(
        openapi_url="/openapi.json", title="trajhub API",
        redoc_js_url=f"{STATIC}/redoc.standalone.js", redoc_favicon_url=f"{STATIC}/favicon.png",
        with_google_fonts=False)


@router.get(STATIC + "/{name}")
async def asset(name: str) -> Response:
    media = _ASSETS.get(name)
    if media is None:
        raise HTTPException(404, f"no asset {name!r}")
    content = resources.files("fastapi_offline").joinpath("static", name).read_bytes()
    return Response(content, media_type=media, headers={"Cache-Control": "max-age=86400"})
