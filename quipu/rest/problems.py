"""The one place where exceptions become HTTP responses."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from quipu.errors import QuipuError


def install(app: FastAPI) -> None:
    @app.exception_handler(QuipuError)
    async def _quipu_error(_request: Request, exc: QuipuError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)
