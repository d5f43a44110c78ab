"""The web UI: static ES modules and CSS served at `/` and `/ui/...`; no build step.

Every page reads the public REST API from the browser. The shell's Content-Security-Policy allows
only this origin, so the UI never loads anything from another host (it works offline).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
#: scripts, styles and requests from this origin only; style attributes are set through the DOM
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


def mount(app: FastAPI) -> None:
    """Serve the shell at `/` and its assets under `/ui/`."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html",
                            headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache"})

    @app.get("/ui", include_in_schema=False)
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/")

    app.mount("/ui", StaticFiles(directory=STATIC), name="ui")
