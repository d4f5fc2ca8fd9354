"""Instants on the wire: the valid_from normalisation rule (DM §6.1) and "now".

Valid-time columns compare as text, so every instant we store or compare must be spelled
``YYYY-MM-DDTHH:MM:SSZ``: offset applied, fraction truncated.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from quipu.errors import InvalidField

_INSTANT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
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


def normalise_timestamp(text: str | None) -> str:
    """A write timestamp: free text kept verbatim, normalised when it parses, now when absent."""
    if text is None or text == "":
        return now()
    return parse_instant(text) or text


def normalise_valid_at(text: str | None) -> str | None:
    """A read point in valid time: normalised when it parses, otherwise compared verbatim."""
    if text is None:
        return None
    return parse_instant(text) or text
