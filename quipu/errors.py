"""One exception tree for the whole service.

Each class knows its HTTP status and a stable machine-readable ``reason``; the REST layer maps
them to responses in one place, and the CLI prints ``message`` and exits non-zero.
"""

from __future__ import annotations


class QuipuError(Exception):
    """Base of every error quipu raises on purpose."""

    status: int = 500
    reason: str = "internal_error"

    def __init__(self, message: str, *, reason: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if reason is not None:
            self.reason = reason

    def body(self) -> dict[str, object]:
        out: dict[str, object] = {"error": self.message, "reason": self.reason}
        if self.field is not None:
            out["field"] = self.field
        return out


class BadRequest(QuipuError):
    """Invalid input or a refused write (400, as the original uses for these routes)."""

    status = 400
    reason = "bad_request"


class InvalidField(BadRequest):
    """A named request field has a bad value."""

    reason = "invalid_field"


class UnknownFormat(BadRequest):
    reason = "unknown_format"


class RdfParseError(BadRequest):
    reason = "rdf_parse_error"


class BadLiteral(BadRequest):
    reason = "bad_literal"


class NotFound(BadRequest):
    """An entity, predicate or graph named by the request does not exist (400 by contract)."""

    reason = "not_found"


class UnknownGraph(NotFound):
    reason = "unknown_graph"


class WriteRefused(BadRequest):
    """A guard refused the write; nothing was written."""

    reason = "write_refused"


class QueryError(BadRequest):
    reason = "query_error"


class Unauthorized(QuipuError):
    status = 401
    reason = "missing_or_invalid_bearer_token"


class Forbidden(QuipuError):
    status = 403
    reason = "forbidden"


class QueryTimeout(QuipuError):
    status = 408
    reason = "query_timeout"


class ResultTooLarge(QuipuError):
    status = 422
    reason = "join_limit_exceeded"


class ConfigError(QuipuError):
    """The service cannot start with the given configuration."""

    status = 500
    reason = "config_error"


class StorageError(QuipuError):
    status = 500
    reason = "storage_error"
