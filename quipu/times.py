"""Instants on the wire: the valid_from normalisation rule (DM §6.1) and "now".

Valid-time columns compare as text, so every instant we store or compare must be spelled
``YYYY-MM-DDTHH:MM:SSZ``: offset applied, fraction truncated.

Every other time input is checked too: a write ``timestamp`` and a read ``valid_at`` are an
RFC 3339 instant (normalised as above) or a bare date ``YYYY-MM-DD`` (kept verbatim, and compared
as that text), with years 0001-9999. Anything else is refused with a 400 naming the field: a
``valid_at`` of ``"zzz"`` compared as text would answer silently wrong, and a free-text
``timestamp`` would become the ``valid_from`` of the facts it writes.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from quipu.errors import InvalidField

_INSTANT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_GRAMMAR = (
    "an RFC 3339 instant (YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM) or a date "
    "(YYYY-MM-DD), with a year from 0001 to 9999"
)


def now() -> str:
    """The server's UTC instant, whole seconds."""
    return _format(datetime.now(UTC))


def parse_instant(text: str) -> str | None:
    """Normalise ``text`` if it follows the instant grammar, else return None."""
    m = _INSTANT.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(x) for x in m.groups()[:6])
    offset = m.group(7)
    if hour > 23 or minute > 59 or second > 60:
        return None
    leap = second == 60
    try:
        moment = datetime(year, month, day, hour, minute, 59 if leap else second, tzinfo=UTC)
        if leap:
            moment += timedelta(seconds=1)
        if offset not in ("Z", "z"):
            sign = 1 if offset[0] == "+" else -1
            off_h, off_m = int(offset[1:3]), int(offset[4:6])
            if off_h > 23 or off_m > 59:
                return None
            moment -= sign * timedelta(hours=off_h, minutes=off_m)
    except (ValueError, OverflowError):  # day out of range for month, or year leaves 1..9999
        return None
    if not 1 <= moment.year <= 9999:
        return None
    return _format(moment)


def parse_date(text: str) -> str | None:
    """``text`` if it is a calendar date ``YYYY-MM-DD`` (years 0001-9999), else None."""
    m = _DATE.fullmatch(text)
    if m is None:
        return None
    try:
        date(*(int(x) for x in m.groups()))
    except ValueError:  # year 0000, month 13, February 30th
        return None
    return text


def _format(moment: datetime) -> str:
    # Not strftime: glibc's %Y does not zero-pad years below 1000, and the text must sort.
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def normalise_valid_from(text: str, field: str = "valid_from") -> str:
    """The stored form of an explicit valid_from; a malformed one is refused (400)."""
    out = parse_instant(text) if isinstance(text, str) else None
    if out is None:
        raise InvalidField(
            f"invalid '{field}': {text!r} is not an RFC 3339 instant "
            "(YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM)",
            field=field,
            reason="invalid_valid_from" if field == "valid_from" else "invalid_field",
        )
    return out


def normalise_timestamp(text: str | None, field: str = "timestamp") -> str:
    """A write timestamp: an instant normalised, a bare date kept verbatim, now when absent or
    empty; anything else is refused (400)."""
    if text is None or text == "":
        return now()
    return _instant_or_date(text, field)


def normalise_valid_at(text: str | None, field: str = "valid_at") -> str | None:
    """A read point in valid time: an instant normalised, a bare date kept verbatim (and compared
    as that text, DM §6.1); anything else is refused (400)."""
    if text is None:
        return None
    return _instant_or_date(text, field)


def check_timestamp(text: str | None, field: str = "timestamp") -> None:
    """Refuse (400) a timestamp ``normalise_timestamp`` would refuse later (a staged upload's)."""
    if text is not None and text != "":
        _instant_or_date(text, field)


def _instant_or_date(text: object, field: str) -> str:
    if isinstance(text, str):
        found = parse_instant(text) or parse_date(text)
        if found is not None:
            return found
    raise InvalidField(f"invalid '{field}': {text!r} is not {_GRAMMAR}", field=field)
