"""Where OAuth may go: the one URL policy every OAuth hop passes before any connection opens, so
a hostile MCP server cannot lead the client inward of itself (loopback, link-local, private) or
onto plain http; ``resolver`` is the seam tests replace (see docs/explanation/security.md,
"The OAuth URL policy").
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from .._http.resolve import LookupTimeout, TooManyLookups, is_literal, lookup
from .._secrets import is_loopback_host, redact_url
from ..errors import AuthRequired, ConnectError, RequestTimeout

__all__ = ["LINK_LOCAL", "LOOPBACK", "PRIVATE", "PUBLIC", "UrlPolicy", "resolver", "zone_of"]

PUBLIC, PRIVATE, LINK_LOCAL, LOOPBACK = 0, 1, 2, 3
_NAMES = {PUBLIC: "public", PRIVATE: "private", LINK_LOCAL: "link-local", LOOPBACK: "loopback"}


def _system_resolver(host: str, port: int, seconds: float) -> list[str]:
    return [str(info[4][0]) for info in lookup(host, port, socket.AF_UNSPEC, seconds)]


# The addresses the policy judges a host name by (replace it in tests; see the docstring).
resolver: Callable[[str, int, float], list[str]] = _system_resolver


def zone_of(address: str) -> int:
    """The zone of one IP address (``PUBLIC`` ... ``LOOPBACK``)."""
    ip = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    if ip.is_loopback or ip.is_unspecified:  # 0.0.0.0 reaches this machine too
        return LOOPBACK
    if ip.is_link_local:
        return LINK_LOCAL
    return PUBLIC if ip.is_global else PRIVATE


def _host_zone(host: str, port: int, seconds: float, what: str) -> int:
    """The innermost zone among the addresses of ``host``."""
    if is_loopback_host(host):
        return LOOPBACK
    if is_literal(host):
        return zone_of(host)
    try:
        addresses = resolver(host, port, seconds)
    except (LookupTimeout, TooManyLookups):
        raise RequestTimeout(
            f"authorizing: looking up the {what} host {host!r} got no answer in time",
            seconds,
        ) from None
    except OSError:
        raise ConnectError(f"authorizing: cannot resolve the {what} host {host!r}") from None
    if not addresses:
        raise ConnectError(f"authorizing: the {what} host {host!r} has no address")
    return max(zone_of(address) for address in addresses)


class UrlPolicy:
    """The hops allowed for the OAuth of one MCP server (module docstring).

    ``check`` is the one function every OAuth fetch and the authorization URL pass.
    """

    def __init__(self, server_url: str, *, private_network: bool = False) -> None:
        self.server_url = server_url
        self.private_network = private_network
        self._server_zone: int | None = None

    def _innermost(self, server: int) -> int:
        """The innermost zone a hop of this server's documents may lead to."""
        if server == LOOPBACK:
            return LOOPBACK
        if server == PRIVATE and self.private_network:
            return PRIVATE
        return PUBLIC

    def server_zone(self, seconds: float) -> int:
        """The MCP server's own zone (looked up once; an unknown host counts as public)."""
        if self._server_zone is None:
            parts = urlsplit(self.server_url)
            try:
                zone = _host_zone(parts.hostname or "", _port(parts), seconds, "MCP server")
            except ConnectError:
                zone = PUBLIC  # the strictest: nothing inward is reachable through it
            self._server_zone = zone
        return self._server_zone

    def check(self, url: str, what: str, seconds: float) -> str:
        """``url`` when the MCP server's documents may lead there; else ``AuthRequired``.

        Args:
            seconds: the most the host-name lookups may take (the caller's time left).

        Raises:
            AuthRequired: plain http off loopback, or a host inward of the MCP server.
            RequestTimeout: a lookup did not answer within ``seconds``.
        """
        what = what[4:] if what.startswith("the ") else what  # "the token refresh"
        parts = urlsplit(url)
        host = parts.hostname or ""
        server = self.server_zone(seconds)
        if parts.scheme.lower() != "https" and server != LOOPBACK:
            raise AuthRequired(
                f"refusing the {what} URL {redact_url(url)!r} named by the OAuth documents of "
                f"{redact_url(self.server_url)}: it must use https"
            )
        zone = _host_zone(host, _port(parts), seconds, what)
        if zone > self._innermost(server):
            raise AuthRequired(
                f"refusing the {what} URL {redact_url(url)!r} named by the OAuth documents of "
                f"{redact_url(self.server_url)}: it leads to a {_NAMES[zone]} address, and "
                f"the MCP server is {_NAMES[server]} (no request was sent"
                + (
                    "; OAuth(..., private_network=True) admits private hosts for a private server)"
                    if zone == PRIVATE and server == PRIVATE
                    else ")"
                )
            )
        return url


def _port(parts: object) -> int:
    try:
        port = parts.port  # type: ignore[attr-defined]
    except ValueError:
        port = None
    scheme = str(getattr(parts, "scheme", "")).lower()
    return int(port) if port else (443 if scheme == "https" else 80)
