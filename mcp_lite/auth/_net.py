"""What every OAuth step shares: URL rules, small HTTP exchanges, and keeping secrets out of text.

URL rules (MCP authorization, "Communication Security", and the security best practices):
metadata documents and authorization-server endpoints must be ``https``; plain ``http`` is
accepted only on loopback (``localhost``, ``127.0.0.0/8``, ``::1``), for development. Redirect
URIs must be loopback ``http`` (a native client receives the code on its own machine).

Every exchange uses ``requests`` with a finite timeout, never follows a redirect for a POST,
and maps ``requests`` failures to ``AuthRequired`` with a sentence that names the step and the
URL but never a token, a code, a verifier or a secret (``scrub`` removes any that slip in).
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from .._version import __version__
from ..errors import AuthRequired, ConfigError

log = logging.getLogger("mcp_lite.auth")

DEFAULT_TIMEOUT = 30.0
_MAX_BODY = 1024 * 1024
_EXCERPT = 200


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost`` and loopback IP literals (``127.0.0.0/8``, ``::1``)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secure(url: str, what: str) -> str:
    """``url`` when it is https, or http on loopback; else ``AuthRequired``.

    Also refuses URLs with credentials in them, fragments and any other scheme
    (``javascript:``, ``file:``, ``data:`` ...).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        raise AuthRequired(f"the {what} URL {url!r} is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.hostname:
        raise AuthRequired(f"the {what} URL must be an http(s) URL, got {url!r}")
    if scheme == "http" and not is_loopback_host(parts.hostname):
        raise AuthRequired(
            f"the {what} URL {url!r} must use https (plain http is accepted only on localhost)"
        )
    if parts.username or parts.password:
        raise AuthRequired(f"the {what} URL must not carry credentials")
    if parts.fragment:
        raise AuthRequired(f"the {what} URL {url!r} must not have a fragment")
    return url


def require_loopback_redirect(uri: str) -> str:
    """A redirect URI we can accept: ``http`` on a loopback host; else ``ConfigError``."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "http" or not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"redirect_uri must be a loopback http URL such as "
            f"http://127.0.0.1:8976/callback, got {uri!r}"
        )
    return uri


def canonical_url(url: str) -> str:
    """The canonical resource URI (RFC 8707, MCP "Canonical Server URI"): lowercase scheme
    and host, no fragment, no default port, no trailing slash on the path (``/`` alone is
    dropped too), query kept."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, host, path, parts.query, ""))


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (canonical)."""
    parts = urlsplit(canonical_url(url))
    return f"{parts.scheme}://{parts.netloc}"


def resource_covers(resource: str, url: str) -> bool:
    """True when the protected resource ``resource`` covers the server ``url``: same origin
    and ``url``'s path equal to or below the resource's path (RFC 9728 / RFC 8707)."""
    res, target = urlsplit(canonical_url(resource)), urlsplit(canonical_url(url))
    if (res.scheme, res.netloc) != (target.scheme, target.netloc):
        return False
    base = res.path.rstrip("/")
    return target.path == base or target.path.startswith(base + "/") or base == ""


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (longer than 3 characters) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) > 3:
            text = text.replace(secret, "[redacted]")
    return text


class Http:
    """The HTTP side of OAuth: finite timeouts, no redirects followed, bounded JSON bodies,
    errors as ``AuthRequired``.

    Without a ``session`` every exchange uses a short-lived one that is closed at once (OAuth
    traffic is rare; nothing stays open between logins). A given ``session`` is used as is
    (proxies, CA bundle, retries of your choosing) and never closed here.
    """

    def __init__(
        self, session: requests.Session | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.session = session
        self.timeout = timeout

    def exchange(
        self,
        method: str,
        url: str,
        what: str,
        *,
        secrets: Iterable[str | None] = (),
        **kwargs: Any,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One request: status, headers and at most ``_MAX_BODY + 1`` bytes of body."""
        headers = {"User-Agent": f"mcp-lite/{__version__}", **kwargs.pop("headers", {})}
        own = self.session is None
        session = requests.Session() if own else self.session
        assert session is not None
        try:
            with session.request(
                method,
                url,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
                **kwargs,
            ) as response:
                raw = response.raw.read(_MAX_BODY + 1, decode_content=True) if response.raw else b""
                return response.status_code, response.headers, raw
        except requests.RequestException as exc:
            raise AuthRequired(
                scrub(f"the {what} request to {url} failed: {type(exc).__name__}", secrets)
            ) from None
        finally:
            if own:
                session.close()

    def get_json(
        self,
        url: str,
        what: str,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """GET a JSON document; None when absent (4xx or a redirect), ``AuthRequired`` on
        anything else that is not a JSON object."""
        require_secure(url, what)
        status, _, raw = self.exchange(
            "GET", url, what, headers={"Accept": "application/json", **(headers or {})}
        )
        if 300 <= status < 500:
            log.debug("%s not at %s (HTTP %s)", what, url, status)
            return None
        if status != 200:
            raise AuthRequired(f"the {what} at {url} answered HTTP {status}")
        return _json_object(raw, f"the {what} at {url}")

    def post(
        self,
        url: str,
        what: str,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
    ) -> tuple[int, dict[str, Any]]:
        """POST a form (or a JSON ``body``); returns the status and the JSON object answer
        (empty when the body is not JSON). Network failures are ``AuthRequired``."""
        require_secure(url, what)
        send_headers = {"Accept": "application/json", **(headers or {})}
        payload: dict[str, Any] = (
            {"json": dict(body)} if body is not None else {"data": dict(form or {})}
        )
        status, _, raw = self.exchange(
            "POST", url, what, secrets=secrets, headers=send_headers, **payload
        )
        try:
            data = _json_object(raw, f"the {what} answer from {url}")
        except AuthRequired:
            data = {}
        return status, data


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    if len(raw) > _MAX_BODY:
        raise AuthRequired(f"{what} is larger than {_MAX_BODY} bytes")
    try:
        value = json.loads(raw.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError):
        raise AuthRequired(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise AuthRequired(f"{what} is not a JSON object")
    return value


def oauth_error(
    status: int, data: Mapping[str, Any], what: str, secrets: Iterable[str | None] = ()
) -> AuthRequired:
    """An ``AuthRequired`` for an OAuth error answer (RFC 6749 §5.2): code and description,
    bounded, with secrets scrubbed."""
    code = str(data.get("error") or f"HTTP {status}")[:_EXCERPT]
    description = str(data.get("error_description") or "")[:_EXCERPT]
    text = f"{what} was refused: {code}" + (f" ({description})" if description else "")
    return AuthRequired(scrub(text, secrets))
