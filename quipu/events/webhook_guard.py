"""Where a webhook may point: http(s) only, and, unless ``events.webhook_allow_private`` is on,
only public addresses (a server-side request forgery guard).

The address check runs twice: when a subscription is created, and before every delivery, on
the addresses DNS gives then. The delivery connects to the address that passed the check (the
Host header and TLS server name keep the URL's name), so a name that re-resolves to a private
address between the check and the connection (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from quipu.errors import InvalidField

FIELD = "webhook_url"
MAX_URL = 2048

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(InvalidField):
    """A webhook URL, or the address it resolves to, is not allowed."""


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook URL, split into what a connection needs."""

    url: str
    scheme: str  # http | https
    host: str  # the name (or literal) as written, without brackets
    port: int


def parse(url: str | None) -> Target:
    """Check the URL's shape (scheme, host, port); no DNS."""
    text = (url or "").strip()
    if not text:
        raise WebhookRefused("webhook_url is required", field=FIELD)
    if len(text) > MAX_URL:
        raise WebhookRefused(f"webhook_url is longer than {MAX_URL} characters", field=FIELD)
    if any(c.isspace() or ord(c) < 0x20 for c in text):
        raise WebhookRefused("webhook_url must not contain whitespace or control characters", field=FIELD)
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise WebhookRefused(f"webhook_url is not a valid URL: {exc}", field=FIELD) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = scheme or "none"
        raise WebhookRefused(f"webhook_url must be an http or https URL (scheme: {shown})", field=FIELD)
    if not parts.hostname:
        raise WebhookRefused("webhook_url has no host", field=FIELD)
    if parts.username is not None or parts.password is not None:
        # Credentials in the URL would be listed back to every caller of list; use a secret.
        raise WebhookRefused("webhook_url must not carry user:password credentials", field=FIELD)
    default = 443 if scheme == "https" else 80
    return Target(text, scheme, parts.hostname, port if port is not None else default)


def literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


# IPv6 prefixes that carry an IPv4 address in their last 32 bits: NAT64 (well-known and
# local-use) and the deprecated IPv4-compatible form. A gateway would take them to that address.
_V4_IN_LOW_BITS = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::/96"),
)


def _embedded(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: mapped, 6to4, Teredo, NAT64, compatible."""
    out = [v4 for v4 in (address.ipv4_mapped, address.sixtofour) if v4 is not None]
    if address.teredo is not None:
        out.extend(address.teredo)
    if any(address in net for net in _V4_IN_LOW_BITS):
        out.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return out


def is_public(address: IpAddress) -> bool:
    """Globally routable unicast: not loopback, private, link-local, shared, reserved or
    multicast, and no IPv4 address inside it (mapped, 6to4, Teredo, NAT64) that is any of those."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded(address)
        if inner:
            return all(is_public(v4) for v4 in inner)
    return address.is_global and not address.is_multicast


def resolve(target: Target) -> list[IpAddress]:
    """Every address the host resolves to now (a literal is itself)."""
    found = literal(target.host)
    if found is not None:
        return [found]
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebhookRefused(
            f"webhook_url host '{target.host}' does not resolve: {exc}", field=FIELD
        ) from None
    addresses: list[IpAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def allowed_addresses(target: Target, *, allow_private: bool) -> list[IpAddress]:
    """The addresses a delivery may connect to; refuses when any resolved address is private
    (a name with one public and one private record could be steered to the private one)."""
    addresses = resolve(target)
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise WebhookRefused(
                f"webhook_url host '{target.host}' resolves to a non-public address ({private[0]}); "
                "set [quipu.events] webhook_allow_private = true to allow loopback, link-local "
                "and private receivers",
                field=FIELD,
            )
    return addresses


def check(url: str | None, *, allow_private: bool) -> Target:
    """The create-time check: the URL's shape, and (unless private receivers are allowed) that
    every address its host resolves to is public."""
    target = parse(url)
    if not allow_private:
        allowed_addresses(target, allow_private=False)
    return target
