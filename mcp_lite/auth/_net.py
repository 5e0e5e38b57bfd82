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
        raise AuthRequired(f"the {what} URL {url!r} must use https "
                           f"(plain http is accepted only on localhost)")
    if parts.username or parts.password:
        raise AuthRequired(f"the {what} URL must not carry credentials")
    if parts.fragment:
        raise AuthRequired(f"the {what} URL {url!r} must not have a fragment")
    return url


def require_loopback_redirect(uri: str) -> str:
    """A redirect URI we can accept: ``http`` on a loopback host; else ``ConfigError``."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "http" or not is_loopback_host(parts.hostname):
        raise ConfigError(f"redirect_uri must be a loopback http URL such as "
                          f"http://127.0.0.1:8976/callback, got {uri!r}")
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
    """The HTTP side of OAuth: one pooled ``requests.Session``, finite timeouts, no
    redirects on POST, JSON in, errors as ``AuthRequired``."""

    def __init__(self, session: requests.Session | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", f"mcp-lite/{__version__}")
        self.timeout = timeout

    def get_json(self, url: str, what: str, headers: Mapping[str, str] | None = None,
                 ) -> dict[str, Any] | None:
        """GET a JSON document; None on 404/4xx (absent), ``AuthRequired`` on anything
        else that is not a JSON object."""
        require_secure(url, what)
        try:
            response = self.session.get(url, headers={"Accept": "application/json",
                                                      **(headers or {})},
                                        timeout=self.timeout, allow_redirects=False,
                                        stream=True)
        except requests.RequestException as exc:
            raise AuthRequired(f"could not fetch the {what} from {url}: "
                               f"{type(exc).__name__}") from None
        with response:
            if 400 <= response.status_code < 500 or response.status_code in (301, 302, 303,
                                                                              307, 308):
                log.debug("%s not at %s (HTTP %s)", what, url, response.status_code)
                return None
            if response.status_code != 200:
                raise AuthRequired(f"the {what} at {url} answered HTTP {response.status_code}")
            return _json_object(response, f"the {what} at {url}")

    def post(self, url: str, what: str, *, form: Mapping[str, str] | None = None,
             body: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
             secrets: Iterable[str | None] = ()) -> tuple[int, dict[str, Any]]:
        """POST a form (or a JSON ``body``); returns the status and the JSON object answer
        (empty when the body is not JSON). Network failures are ``AuthRequired``."""
        require_secure(url, what)
        send_headers = {"Accept": "application/json", **(headers or {})}
        try:
            if body is not None:
                response = self.session.post(url, json=dict(body), headers=send_headers,
                                             timeout=self.timeout, allow_redirects=False,
                                        stream=True)
            else:
                response = self.session.post(url, data=dict(form or {}), headers=send_headers,
                                             timeout=self.timeout, allow_redirects=False,
                                        stream=True)
        except requests.RequestException as exc:
            raise AuthRequired(scrub(f"the {what} request to {url} failed: "
                                     f"{type(exc).__name__}", secrets)) from None
        with response:
            try:
                data = _json_object(response, f"the {what} answer from {url}")
            except AuthRequired:
                data = {}
            return response.status_code, data

    def close(self) -> None:
        self.session.close()


def _json_object(response: requests.Response, what: str) -> dict[str, Any]:
    raw = response.raw.read(_MAX_BODY + 1, decode_content=True) if response.raw else b""
    if len(raw) > _MAX_BODY:
        raise AuthRequired(f"{what} is larger than {_MAX_BODY} bytes")
    try:
        value = json.loads(raw.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError):
        raise AuthRequired(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise AuthRequired(f"{what} is not a JSON object")
    return value


def oauth_error(status: int, data: Mapping[str, Any], what: str,
                secrets: Iterable[str | None] = ()) -> AuthRequired:
    """An ``AuthRequired`` for an OAuth error answer (RFC 6749 §5.2): code and description,
    bounded, with secrets scrubbed."""
    code = str(data.get("error") or f"HTTP {status}")[:_EXCERPT]
    description = str(data.get("error_description") or "")[:_EXCERPT]
    text = f"{what} was refused: {code}" + (f" ({description})" if description else "")
    return AuthRequired(scrub(text, secrets))
