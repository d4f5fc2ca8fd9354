"""Structured logs: one JSON object per line on stderr (stdout stays free for protocols)."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        out: dict[str, Any] = {
            "ts": f"{stamp}.{int(record.msecs):03d}Z",  # milliseconds: requests are shorter than seconds
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update({k: v for k, v in fields.items() if k not in out})  # never mask ts/level/msg
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "info") -> None:
    """Send quipu's and uvicorn's logs to stderr as JSON lines (called by quipu-server)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # Libraries whose INFO lines repeat what the access log says (httpx: every in-process MCP
    # dispatch) or only describe start-up mechanics (alembic's migration context).
    for name in ("httpx", "alembic", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
