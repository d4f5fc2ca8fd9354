"""One exception tree for the whole service.

Each class knows its HTTP status and a stable machine-readable ``reason``; the REST layer maps
them to responses in one place (``quipu.rest.problems``), and the CLI prints ``message`` and
exits non-zero::

    QuipuError                      500 internal_error
    ├── BadRequest                  400 bad_request
    │   ├── InvalidField            400 invalid_field     a named field has a bad value
    │   │   ├── MissingField        400 missing_field     a required field is absent
    │   │   ├── UnknownField        400 unknown_field     a strict route got a key it does not know
    │   │   └── WrongType           400 wrong_type        a known key of the wrong JSON type
    │   ├── UnknownFormat           400 unknown_format
    │   ├── RdfParseError           400 rdf_parse_error
    │   ├── BadLiteral              400 bad_literal
    │   ├── NotFound                400 not_found         (400, not 404, by contract)
    │   │   └── UnknownGraph        400 unknown_graph
    │   ├── WriteRefused            400 write_refused     a guard refused; nothing was written
    │   │   └── ShaclViolation      400 shacl_violation   the SHACL gate refused (/knot answers 200)
    │   └── QueryError              400 query_error
    ├── Unauthorized                401 missing_or_invalid_bearer_token
    ├── Forbidden                   403 forbidden
    │   └── ReadOnly                403 server_is_read_only
    ├── RouteNotFound               404 no_such_route
    ├── MethodNotAllowed            405 method_not_allowed
    ├── QueryTimeout                408 query_timeout     (a logic goal's: logic_timeout)
    ├── PayloadTooLarge             413 payload_too_large
    ├── UriTooLong                  414 uri_too_long
    ├── UnsupportedMediaType        415 unsupported_media_type
    ├── ResultTooLarge              422 join_limit_exceeded
    │   └── QueryTooExpensive       422 query_too_expensive  its SQL passed the work budget
    ├── ConfigError                 500 config_error
    ├── StorageError                500 storage_error     the database failed (translated by the store)
    ├── ServerBusy                  503 server_busy       every read slot stayed taken (Retry-After)
    └── LogicError                  400 logic_error       the logic memory's branch, drawn in
                                                          quipu.logic.errors (engine, limits,
                                                          refused goals, Prolog syntax)
"""

from __future__ import annotations

from typing import Any


class QuipuError(Exception):
    """Base of every error quipu raises on purpose."""

    status: int = 500
    reason: str = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra or {}
        if reason is not None:
            self.reason = reason

    def headers(self) -> dict[str, str]:
        """HTTP headers the response carries beside the body (``Retry-After`` of a 503)."""
        return {}

    def body(self) -> dict[str, object]:
        out: dict[str, object] = {"error": self.message, "reason": self.reason}
        if self.field is not None:
            out["field"] = self.field
        out.update(self.extra)
        return out


def internal_error(what: str = "the request") -> QuipuError:
    """What an unexpected failure becomes on the wire: it names nothing of the cause, which is
    logged where it is caught (REST's last-resort handler, the MCP dispatcher)."""
    return QuipuError(f"internal error: {what} could not be completed")


class BadRequest(QuipuError):
    """Invalid input or a refused write (400, as the original uses for these routes)."""

    status = 400
    reason = "bad_request"


class InvalidField(BadRequest):
    """A named request field has a bad value."""

    reason = "invalid_field"


class MissingField(InvalidField):
    """A required field is absent."""

    reason = "missing_field"


class UnknownField(InvalidField):
    """A strict route was sent a key it does not declare."""

    reason = "unknown_field"


class WrongType(InvalidField):
    """A known key carries the wrong JSON type."""

    reason = "wrong_type"


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


class ShaclViolation(WriteRefused):
    """The SHACL gate refused a write; ``report`` is the structured validation report (JSON form).

    ``/knot`` turns this into HTTP 200 ``conforms: false`` (tools-core §3.1 rule 4); on other
    routes it is a 400 whose body carries the report.
    """

    reason = "shacl_violation"

    def __init__(self, message: str, report: dict[str, Any]) -> None:
        super().__init__(message, extra=report)
        self.report = report


class QueryError(BadRequest):
    reason = "query_error"


class Unauthorized(QuipuError):
    """A write without a valid bearer credential while one is configured."""

    status = 401
    reason = "missing_or_invalid_bearer_token"


class Forbidden(QuipuError):
    status = 403
    reason = "forbidden"


class ReadOnly(Forbidden):
    """Every write is refused on a read-only server, even with a valid credential."""

    reason = "server_is_read_only"


class RouteNotFound(QuipuError):
    """No route has this path (routes' own "not found" answers are 400 by contract)."""

    status = 404
    reason = "no_such_route"


class MethodNotAllowed(QuipuError):
    status = 405
    reason = "method_not_allowed"


class QueryTimeout(QuipuError):
    status = 408
    reason = "query_timeout"


class PayloadTooLarge(QuipuError):
    status = 413
    reason = "payload_too_large"


class UriTooLong(QuipuError):
    status = 414
    reason = "uri_too_long"


class UnsupportedMediaType(QuipuError):
    status = 415
    reason = "unsupported_media_type"


class ResultTooLarge(QuipuError):
    status = 422
    reason = "join_limit_exceeded"


class QueryTooExpensive(ResultTooLarge):
    """A query's SQL statements did more work than its budget (SQLite VM steps) allows.

    Refused like the join bound the budget derives from: the same query on the same data is
    refused again, so it is a 4xx a client must change, not a 408 it may retry.
    """

    reason = "query_too_expensive"


class ConfigError(QuipuError):
    """The service cannot start with the given configuration."""

    status = 500
    reason = "config_error"


class StorageError(QuipuError):
    status = 500
    reason = "storage_error"


class ServerBusy(QuipuError):
    """Every slot of a read lane stayed taken for the whole bounded wait; try again later."""

    status = 503
    reason = "server_busy"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, extra={"retry_after": retry_after})
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
