"""What the HTTP transports share: the pooled ``requests`` session, redirect and origin
rules, bearer-token auth, header encoding for 2026-07-28, and mapping of ``requests``
errors to ``mcp_lite.errors`` (nothing from ``requests`` leaves the transports).

Redirects are never followed blindly: a redirect to another origin is refused (a token or
a session id must not travel to a host the user did not name); 307/308 within the origin
are followed, up to three times.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import inspect
import logging
import math
import os
import random
import re
import socket
import threading
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.cookies import extract_cookies_to_jar

from .. import _fork
from .._accel import decode_message
from .._deadline import Deadline
from .._secrets import redact_text, redact_url, scrub, sent_secrets
from .._version import __version__
from ..errors import (
    AuthRequired,
    ConfigError,
    ConnectError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from ..protocol.param_headers import argument_at, header_map, header_text
from . import h1 as _http_wire
from . import peer as _http_peer
from . import slots as _http_abort
from . import unix as _http_unix
from . import unix_client as _http_lean
from .causes import network_cause
from .retry import Retry
from .slots import AbortingAdapter

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "Auth",
    "Countdown",
    "abort",
    "answers",
    "iter_body",
    "read_limited",
    "reconnect_delay",
    "rpc_error",
    "status_error",
    "DEFAULT_READ_TIMEOUT",
    "HttpOptions",
    "TokenAuth",
    "as_auth",
    "bearer",
    "body_excerpt",
    "close_session",
    "drain",
    "encode_header_value",
    "is_terminal_network_error",
    "learn_param_headers",
    "make_session",
    "param_header_map",
    "param_headers",
    "map_error",
    "origin",
    "request",
    "send_authorized",
]

log = logging.getLogger("mcp_lite.http")

DEFAULT_CONNECT_TIMEOUT = 10.0
# Read timeout of a POST: the longest silence between two bytes of a response. The session
# enforces each request's own deadline; this only bounds a worker stuck on a dead socket.
DEFAULT_READ_TIMEOUT = 600.0
_EXCERPT = 300
_REDIRECTS = (301, 302, 303, 307, 308)
_HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")


class Auth(Protocol):
    """The seam for bearer tokens (``mcp_lite.auth.OAuth`` is one).

    ``token()`` returns the token to send (or None); ``refresh(sent)`` is called after a 401
    with the token that was sent and returns a new one (or None when it cannot). A
    ``refresh`` that also accepts ``challenge=`` (the ``WWW-Authenticate`` value) and
    ``status=`` is called after a 403 too (step-up); an optional ``bind(url)`` is called with
    the server URL before a token is asked for, and may refuse a URL the tokens are not for.
    Optional too: ``authorization_headers(token, method, url)`` (how the token is presented:
    OAuth uses it for DPoP proofs) and ``observe_response(url, headers)`` (a DPoP nonce).
    """

    def token(self) -> str | None: ...

    def refresh(self, sent: str | None) -> str | None: ...


class TokenAuth:
    """Wraps a token-provider callable as an ``Auth``.

    ``provider()`` is called for the first token and again for each refresh. Refresh
    compares the token that was sent with the current one under a lock, so many requests
    that got 401 with the same token cause one refresh, not one each (no ABA race).
    """

    def __init__(self, provider: Callable[[], str | None]) -> None:
        self._provider = provider
        self._lock = threading.Lock()
        self._token: str | None = None
        self._fetched = False
        _token_auths.add(self)

    def token(self) -> str | None:
        with self._lock:
            if not self._fetched:
                self._token = self._provider()
                self._fetched = True
            return self._token

    def refresh(self, sent: str | None) -> str | None:
        with self._lock:
            if self._fetched and self._token != sent:
                return self._token  # another request already refreshed it
            self._token = self._provider()
            self._fetched = True
            return self._token


# A forked child replaces their locks: a parent thread may have held one inside provider().
_token_auths: weakref.WeakSet[TokenAuth] = weakref.WeakSet()


def _reset_token_auths() -> None:
    for auth in list(_token_auths):
        auth._lock = threading.Lock()


_fork.on_child(_reset_token_auths)


def as_auth(auth: Any) -> Auth | None:
    """``auth`` as given by the user: None, an object with ``token``/``refresh``, a
    callable token provider, or a static token string."""
    if auth is None:
        return None
    if hasattr(auth, "token") and hasattr(auth, "refresh"):
        return auth  # type: ignore[no-any-return]
    if isinstance(auth, str):
        value = auth
        return TokenAuth(lambda: value)
    if callable(auth):
        return TokenAuth(auth)
    raise ConfigError(
        f"auth must be a token string, a callable or an object with "
        f"token()/refresh(), not {type(auth).__name__}"
    )


@dataclass(frozen=True)
class HttpOptions:
    """Settings shared by the HTTP transports (built by ``make_transport``)."""

    url: str
    headers: Mapping[str, str]
    auth: Auth | None = None
    name: str = ""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    # The GET stream has no read timeout unless this is set: the longest silence accepted.
    idle_timeout: float | None = None
    max_message_size: int = 64 * 1024 * 1024
    pool_size: int = 16
    retry: Retry = Retry()
    # ``unix://``: the uids the process behind the socket may run as (None: ``peer``'s
    # default, this user, root and ``MCP_LITE_GATEWAY_USER``)
    peer_uids: frozenset[int] | None = None

    def __repr__(self) -> str:  # no header value, token or URL query in a repr
        return f"HttpOptions(url={redact_url(self.url)!r}, name={self.name!r})"


def make_session(options: HttpOptions) -> requests.Session:
    """A pooled session: keep-alive pool as large as our concurrency, our User-Agent and the
    configured headers.

    The environment's proxies (``HTTPS_PROXY``, ``NO_PROXY``...) and CA bundle
    (``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``) are honoured, but resolved once here for the
    server's URL: with ``trust_env`` on, requests re-reads the environment and stats
    ``~/.netrc`` on every request, about a fifth of a call's CPU. (``.netrc`` credentials are
    not used: give ``headers`` or ``auth`` instead.)
    """
    session = requests.Session()
    session.proxies.update(requests.utils.get_environ_proxies(options.url))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    session.trust_env = False
    # Our adapter's connections register their sockets so that a deadline can abort them.
    adapter: HTTPAdapter = _http_abort.AbortingAdapter(
        pool_connections=4, pool_maxsize=options.pool_size * 4, max_retries=0
    )
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    unix = _http_unix.is_unix_url(options.url)
    peers = None
    if unix:  # HTTP over a Unix socket: no proxy, no TLS; only a peer of an allowed user
        peers = options.peer_uids if options.peer_uids is not None else _http_peer.allowed_uids()
        session.mount(
            "unix://", _http_unix.UnixAdapter(pool_maxsize=options.pool_size * 4, peers=peers)
        )
    session.headers["User-Agent"] = f"mcp-lite/{__version__}"
    # SSE must not be buffered by a decompressor; JSON bodies are small enough.
    session.headers["Accept-Encoding"] = "identity"
    session.headers.update(dict(options.headers))
    # What _send merges under each request's headers, lowercased once (fixed from here on).
    session.__dict__["_mcp_lite_headers"] = base = _base_headers(session)
    if unix:  # its exchanges skip requests (``_http.lean``)
        session.__dict__["_mcp_lite_unix"] = _http_lean.UnixClient(base, peers)
    return session


def _base_headers(session: requests.Session) -> tuple[tuple[str, str, Any], ...]:
    """The session's headers as ``(name, lowercase name, value)``."""
    return tuple((k, k.lower(), v) for k, v in session.headers.items())


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def request(
    session: requests.Session,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    data: bytes | None = None,
    timeout: tuple[float, float | None],
    stream: bool = True,
) -> requests.Response:
    """One HTTP exchange, following same-origin redirects only.

    Raises:
        ConnectError: a redirect to another origin, or too many redirects.
        requests.RequestException: network failures (map them with ``map_error``).
    """
    response: requests.Response = request_whole(
        session, method, url, headers=headers, data=data, timeout=timeout, stream=stream
    )
    return response


def request_whole(
    session: requests.Session,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    data: bytes | None = None,
    timeout: tuple[float, float | None],
    stream: bool = True,
    whole: bool = False,
) -> Any:
    """``request``; with ``whole``, a small JSON success on the ``unix://`` lean path
    comes back as a ``lean.Answer`` (no ``requests.Response``; see
    ``UnixClient.request``), anything else as a response."""
    for _ in range(4):
        response = _send(session, method, url, headers, data, timeout, stream, whole)
        if type(response) is _http_lean.Answer:
            return response
        if response.status_code not in _REDIRECTS or "location" not in response.headers:
            return response
        target = urljoin(url, response.headers["location"])
        drain(response, 64 * 1024)
        response.close()
        if origin(target) != origin(url):
            raise ConnectError(
                f"refused a redirect from {redact_url(url)} to another origin: {redact_url(target)}"
            )
        if response.status_code in (301, 302, 303) and method != "GET":
            raise ConnectError(
                f"{method} {redact_url(url)} was redirected ({response.status_code}) to "
                f"{redact_url(target)}; only 307/308 keep the request body"
            )
        url = target
    raise ConnectError(f"too many redirects from {redact_url(url)}")


def _send(
    session: requests.Session,
    method: str,
    url: str,
    headers: Mapping[str, str],
    data: bytes | None,
    timeout: tuple[float, float | None],
    stream: bool,
    whole: bool = False,
) -> Any:
    """``session.request(...)`` without redirects, through the session's own adapter.

    When nothing of the session's per-request machinery applies (no cookies, no session
    auth, no hooks, no params, environment already resolved: ``make_session``), the request
    is prepared here (the URL once per session) and handed to the adapter: the same
    adapter, urllib3 pool, proxies, TLS settings and error mapping, at a fraction of the
    CPU. Otherwise (a cookie was set, a user added hooks) it is the full ``Session.request``.
    A ``unix://`` URL goes through the session's ``_http.lean`` client when it applies.
    """
    lean = session.__dict__.get("_mcp_lite_unix")
    if (
        lean is not None
        and _no_cookies(session.cookies)
        and session.auth is None
        and not session.params
        and not any(session.hooks.values())
        and _http_unix.is_unix_url(url)
    ):
        answer: Any = lean.request(method, url, headers, data, timeout, whole and stream)
        if type(answer) is _http_lean.Answer:
            return answer
        if answer is not None:
            if "set-cookie" in answer.headers:  # from now on, the full path sends them back
                extract_cookies_to_jar(session.cookies, answer.request, answer.raw)  # type: ignore[no-untyped-call]
            if not stream:
                answer.content  # noqa: B018 - read it now, as Session.request does
            return answer
    if (
        session.trust_env
        or session.cookies
        or session.auth is not None
        or session.params
        or any(session.hooks.values())
    ):
        return session.request(
            method,
            url,
            headers=dict(headers),
            data=data,
            timeout=timeout,
            stream=stream,
            allow_redirects=False,
        )
    prepared = requests.PreparedRequest()
    prepared.method = method
    prepared.url = _prepared_url(session, url)
    # The session's headers under ours, case-insensitively (a plain dict: cheaper than
    # CaseInsensitiveDict, and the adapter only asks for "Content-Length", set here).
    ours = {key.lower() for key in headers}
    base = session.__dict__.get("_mcp_lite_headers") or _base_headers(session)
    merged = {k: v for k, low, v in base if low not in ours}
    merged.update(headers)
    merged.pop("content-length", None)
    prepared.headers = merged  # type: ignore[assignment]
    prepared.body = data
    if data is not None:
        merged["Content-Length"] = str(len(data))
    elif method not in ("GET", "HEAD"):
        merged["Content-Length"] = "0"
    prepared.hooks = {"response": []}
    adapter: Any = session.get_adapter(prepared.url)
    response: requests.Response | None = None
    if stream and method == "POST" and not session.proxies and isinstance(adapter, AbortingAdapter):
        # The common case (no proxy, a kept-alive connection): a cheaper exchange on a
        # connection of the same pool (``_http.wire``); None when it does not apply.
        pool = adapter.get_connection_with_tls_context(prepared, session.verify, None, session.cert)
        path = adapter.request_url(prepared, None)
        host = "host" in ours or any(low == "host" for _, low, _ in base)
        response = _http_wire.post(pool, path, merged, data, timeout, prepared, host)
    if response is None:
        response = adapter.send(
            prepared,
            stream=stream,
            timeout=timeout,
            verify=session.verify,
            cert=session.cert,
            proxies=session.proxies,
        )
    if "set-cookie" in response.headers:  # from now on, the full path sends them back
        extract_cookies_to_jar(session.cookies, prepared, response.raw)  # type: ignore[no-untyped-call]
    if not stream:
        response.content  # noqa: B018 - read it now, as Session.request does
    return response


def _no_cookies(jar: Any) -> bool:
    """``not jar``, without iterating a ``CookieJar`` (its ``__len__`` walks every domain)."""
    store = getattr(jar, "_cookies", None)
    return not store if isinstance(store, dict) else not jar


def _prepared_url(session: requests.Session, url: str) -> str:
    cache: dict[str, str] = session.__dict__.setdefault("_mcp_lite_urls", {})
    prepared = cache.get(url)
    if prepared is None:
        probe = requests.PreparedRequest()
        probe.prepare_url(url, None)
        prepared = str(probe.url)
        if len(cache) < 64:
            cache[url] = prepared
    return prepared


def body_excerpt(response: requests.Response) -> str:
    """At most a few hundred characters of the body, for error messages; never raises."""
    try:
        raw = read_limited(response, _EXCERPT + 1) if response.raw else b""
    except Exception:
        return ""
    text = raw.decode("utf-8", "replace").strip()
    return text[:_EXCERPT] + ("..." if len(text) > _EXCERPT else "")


def status_error(response: requests.Response, what: str, body: str | None = None) -> McpError:
    """The error for a non-success status: ``AuthRequired`` for 401/403-with-challenge,
    else a ``ConnectError`` quoting the status and a bounded excerpt of the body."""
    text = body_excerpt(response) if body is None else body[:_EXCERPT]
    # A server may echo what it was sent: never show our header values or token back.
    request = getattr(response, "request", None)
    text = scrub(text, sent_secrets(getattr(request, "headers", None)))
    status = response.status_code
    detail = f"HTTP {status} {response.reason or ''}".rstrip()
    message = f"{what}: {detail}" + (f": {text}" if text else "")
    after = response.headers.get("Retry-After") if status in (429, 503) else None
    if after:  # not retried: the wait it asks for is past the deadline, or too long
        message += f" (the server asks to retry after {after[:40]!r}; not retried)"
    error: McpError
    if status == 401 or (
        status == 403 and _INSUFFICIENT_SCOPE.search(response.headers.get("WWW-Authenticate", ""))
    ):
        error = AuthRequired(message + " (authorization required)")
    else:
        error = ConnectError(message)
    error._http_status = status
    return error


# --- bearer tokens ------------------------------------------------------------------------------

# Step-ups (403 insufficient_scope, spec 2025-11-25 "Scope Challenge Handling") per request:
# after this many new authorizations the 403 is final ("retry no more than a few times").
MAX_STEP_UPS = 2
_INSUFFICIENT_SCOPE = re.compile(r"error\s*=\s*\"?insufficient_scope", re.IGNORECASE)
_USE_DPOP_NONCE = re.compile(r"error\s*=\s*\"?use_dpop_nonce", re.IGNORECASE)


def bearer(
    auth: Auth | None, url: str, deadline: Deadline | None = None, method: str = "GET"
) -> dict[str, str]:
    """The ``Authorization`` header (and a DPoP proof, for a DPoP-bound token) for a
    ``method`` request to the server at ``url``; empty without a token.
    ``auth.bind(url)`` runs first, so tokens only go to the server they are for."""
    token = _token(auth, url, deadline)
    return presentation(auth, token, method, url) if token and auth is not None else {}


def presentation(auth: Auth, token: str, method: str, url: str) -> dict[str, str]:
    """How ``token`` is shown to the server: ``auth.authorization_headers`` when ``auth``
    has it (OAuth: bearer or DPoP), else a bearer token."""
    build = getattr(auth, "authorization_headers", None)
    if build is not None:
        return dict(build(token, method, url))
    return {"Authorization": f"Bearer {token}"}


def observe(auth: Auth | None, url: str, headers: Mapping[str, str]) -> bool:
    """Hand a response's headers to ``auth`` (a DPoP nonce); True when it learned a new one."""
    look = getattr(auth, "observe_response", None)
    return bool(look(url, headers)) if look is not None else False


def send_authorized(
    auth: Auth | None,
    url: str,
    headers: dict[str, str],
    send: Callable[[dict[str, str]], requests.Response],
    deadline: Deadline | None = None,
    method: str = "POST",
    request_url: str | None = None,
    given_up: Callable[[], bool] | None = None,
) -> requests.Response:
    """``send(headers)`` with the token of ``auth``; after a 401 ask ``auth`` for a new
    token and retry once (a DPoP ``use_dpop_nonce`` 401 with a new nonce is retried once
    with the same token and a new proof); after a 403 ``insufficient_scope`` step up, at
    most ``MAX_STEP_UPS`` times. Returns the last response (the caller maps its status).

    ``deadline`` (the caller's) bounds what ``auth`` does: an auth whose ``token``/``refresh``
    take ``deadline=`` gets the ``Deadline`` itself (OAuth does), one that takes
    ``timeout=`` the seconds left.
    ``url`` is the server the token is for; ``request_url`` (default ``url``) is where this
    request goes (a legacy-SSE endpoint), which a DPoP proof names. When ``given_up()`` is
    true (the transport closed, the caller left) a 401 or 403 is returned as is: no
    refresh, no login, for nobody."""
    target = request_url or url
    # After the caller left (or the transport closed) no refresh starts for this request.
    token = None if given_up is not None and given_up() else _token(auth, url, deadline)
    if token and auth is not None:
        headers.update(presentation(auth, token, method, target))
    response = send(headers)
    if auth is None:
        return response
    refreshed, renonced, step_ups = False, False, 0
    while True:
        status = response.status_code
        challenge = response.headers.get("WWW-Authenticate")
        new_nonce = observe(auth, target, response.headers)
        if (
            status == 401
            and token
            and new_nonce
            and not renonced
            and _USE_DPOP_NONCE.search(challenge or "")
        ):
            renonced = True
            response.close()
            headers.update(presentation(auth, token, method, target))
            response = send(headers)
            continue
        if status == 401 and not refreshed:
            refreshed = True
        elif (
            status == 403
            and step_ups < MAX_STEP_UPS
            and _INSUFFICIENT_SCOPE.search(challenge or "")
        ):
            step_ups += 1
        else:
            return response
        if given_up is not None and given_up():
            return response
        try:
            fresh = _refresh(auth, token, challenge, status, deadline)
        except BaseException:
            response.close()
            raise
        if not fresh or (fresh == token and not new_nonce):
            return response
        response.close()
        token = fresh
        headers.update(presentation(auth, token, method, target))
        response = send(headers)


def _parameters(method: Any) -> Mapping[str, Any]:
    try:
        return inspect.signature(method).parameters
    except (TypeError, ValueError):
        return {}


# Parameter names of an auth type's token/refresh, looked up once per type: inspect.signature
# costs tens of microseconds, and it ran on every authenticated request.
_ACCEPTS: dict[tuple[type, str], frozenset[str]] = {}


def _accepts(auth: Any, name: str) -> frozenset[str]:
    """The parameter names of ``auth.<name>``; cached per type unless the instance itself
    holds that attribute (a callable set on one object)."""
    key = (type(auth), name)
    found = _ACCEPTS.get(key)
    if found is None:
        found = frozenset(_parameters(getattr(auth, name)))
        if name not in getattr(auth, "__dict__", {}) and len(_ACCEPTS) < 256:
            _ACCEPTS[key] = found
    return found


def _left(auth: Any, name: str, deadline: Deadline | None) -> dict[str, Any]:
    """The caller's deadline for ``auth.<name>``: ``deadline=`` (the ``Deadline`` itself)
    when it takes one, else ``timeout=`` seconds left; {} without either (or without a
    finite deadline: then the auth's own total applies)."""
    if deadline is None or deadline.at == math.inf:
        return {}
    parameters = _accepts(auth, name)
    if "deadline" in parameters:
        return {"deadline": deadline}
    if "timeout" in parameters:
        return {"timeout": deadline.remaining()}
    return {}


def _token(auth: Auth | None, url: str, deadline: Deadline | None = None) -> str | None:
    if auth is None:
        return None
    bind = getattr(auth, "bind", None)
    if bind is not None:
        bind(url)
    extra = _left(auth, "token", deadline)
    if extra:
        method: Any = auth.token
        return method(**extra)  # type: ignore[no-any-return]
    return auth.token()


def _refresh(
    auth: Auth,
    sent: str | None,
    challenge: str | None,
    status: int,
    deadline: Deadline | None,
) -> str | None:
    parameters = _accepts(auth, "refresh")
    if "challenge" in parameters:
        refresh: Any = auth.refresh
        extra = _left(auth, "refresh", deadline)
        return refresh(sent, challenge=challenge, status=status, **extra)  # type: ignore[no-any-return]
    return auth.refresh(sent) if status == 401 else None


def is_terminal_network_error(exc: BaseException) -> bool:
    """A reset, timeout or broken pipe: the kind that, repeated, means the link is dead."""
    if isinstance(exc, (requests.Timeout, requests.ConnectionError)):
        return True
    return isinstance(exc, OSError) and exc.errno in (
        errno.ECONNRESET,
        errno.EPIPE,
        errno.ETIMEDOUT,
    )


def map_error(exc: BaseException, what: str) -> McpError:
    """A ``requests`` (or socket) failure as an ``mcp_lite`` error. The library's text
    quotes URLs: their query values and passwords are redacted."""
    if isinstance(exc, McpError):
        return exc
    error = _map_error(exc, what)
    error.message = redact_text(error.message)
    error.args = (error.message, *error.args[1:])
    return error


def _map_error(exc: BaseException, what: str) -> McpError:
    if isinstance(exc, requests.ConnectTimeout):
        return ConnectError(f"{what}: connection timed out")
    if isinstance(exc, requests.Timeout):
        return RequestTimeout(f"{what}: the server stopped sending (timed out)")
    if isinstance(exc, requests.exceptions.SSLError):
        return ConnectError(f"{what}: {network_cause(exc)}")
    if isinstance(exc, requests.ConnectionError):
        cause = network_cause(exc)
        text = str(exc)
        if (
            "refused" in cause
            or "no such host" in cause
            or "Max retries" in text
            or "NameResolution" in text
        ):
            return ConnectError(f"{what}: cannot reach the server: {cause}")
        return ConnectionClosed(f"{what}: connection lost: {cause}")
    if isinstance(
        exc,
        (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
        ),
    ):
        return ConfigError(f"{what}: invalid URL: {exc}")
    if isinstance(exc, (requests.RequestException, OSError)):
        return ConnectionClosed(f"{what}: {network_cause(exc)}")
    return McpError(f"{what}: unexpected {type(exc).__name__}: {exc}")


def encode_header_value(value: str) -> str:
    """A header-safe value: as is when printable ASCII without surrounding spaces, else
    (and when it happens to look like the sentinel) ``=?base64?<utf-8 base64>?=``."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def close_session(session: requests.Session, *responses: requests.Response | None) -> None:
    """Close ``responses`` (their connections with them) and every pool of ``session``, now:
    no socket is left open for the garbage collector to find."""
    for response in responses:
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()
    lean = session.__dict__.get("_mcp_lite_unix")
    if lean is not None:
        lean.close()
    for adapter in list(session.adapters.values()):
        with contextlib.suppress(Exception):
            adapter.close()
    session.close()


def abort(response: requests.Response | None) -> None:
    """Close a streaming response from another thread, waking its blocked reader.

    Closing the file object alone does not wake a thread blocked in ``recv``; shutting the
    socket down does.
    """
    if response is None:
        return
    sock = _socket_of(response)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        response.close()


def _socket_of(response: requests.Response) -> socket.socket | None:
    raw = response.raw
    conn = getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def iter_body(response: requests.Response, chunk: int = 65536) -> Iterator[bytes]:
    """Yield the body as it arrives (``read1``: no waiting for a full buffer), decoded when
    the server compressed it (gzip, deflate) in pieces of at most ``chunk`` bytes, so a
    small compressed body never expands in memory at once.

    Raises:
        ConnectionClosed: the body broke off (a truncated or malformed chunked body, fewer
            bytes than ``Content-Length``, a corrupt compressed stream) or the content
            encoding is not one we can decode. A broken body is never a complete message.
    """
    raw = response.raw
    encoding = response.headers.get("content-encoding", "").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    elif encoding not in ("", "identity"):
        raise ConnectionClosed(f"the server sent a body in an unsupported encoding {encoding!r}")
    while True:
        try:
            data = raw.read1(chunk, decode_content=False)
        except Exception as exc:
            raise ConnectionClosed(f"the response body broke off: {_reason(exc)}") from exc
        if decoder is None:
            if not data:
                return
            yield data
            continue
        try:
            if not data:
                tail = decoder.flush()
                if tail:
                    yield tail
                if not decoder.eof:
                    raise ConnectionClosed("the compressed response body is truncated")
                return
            while data:
                out = decoder.decompress(data, chunk)
                data = decoder.unconsumed_tail
                if out:
                    yield out
        except zlib.error as exc:
            raise ConnectionClosed(f"the compressed response body is corrupt: {exc}") from exc


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "..."


def answers(data: bytes, request_id: int | str) -> bool:
    """True when ``data`` is the response (or a batch holding the response) to ``request_id``."""
    try:
        message = decode_message(data)
    except ValueError:
        return False
    items = message if isinstance(message, list) else [message]
    return any(
        isinstance(m, dict)
        and m.get("id") == request_id
        and "method" not in m
        and ("result" in m or "error" in m)
        for m in items
    )


def rpc_error(body: bytes) -> dict[str, Any] | None:
    """The ``error`` member when ``body`` is one JSON-RPC error response, else None."""
    try:
        message = decode_message(body) if body.strip() else None
    except ValueError:
        return None
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        error: dict[str, Any] = message["error"]
        if isinstance(error.get("code"), int):
            return error
    return None


_BUFFERED = (_http_wire._Body, _http_lean._Whole)  # the raws that have ``buffered``


def read_limited(response: requests.Response, limit: int, *, strict: bool = False) -> bytes:
    """Up to ``limit + 1`` bytes of the (decoded) body: one more than allowed shows it is too
    large, and reading stops there, so no more is ever held.

    ``strict``: a body that broke off raises ``ConnectionClosed`` (a message must be whole);
    otherwise (error bodies, quoted in messages) what arrived is returned.
    """
    raw: Any = response.raw
    if type(raw) in _BUFFERED and response.headers.get("content-encoding") in (None, "identity"):
        whole: bytes | None = raw.buffered(limit + 1)  # a small answer, arrived whole
        if whole is not None:
            return whole
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in iter_body(response, min(65536, limit + 1)):
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                break
    except Exception as exc:
        if strict:
            raise
        log.debug("reading a body failed: %s", exc)
    return b"".join(parts)[: limit + 1]


def drain(response: requests.Response, limit: int) -> None:
    """Read and drop a body we do not need (so the connection can be reused), at most
    ``limit`` bytes; a larger or broken one just closes the connection."""
    with contextlib.suppress(Exception):
        if len(read_limited(response, limit)) > limit:
            response.close()


MAX_RECONNECT_MS = 3_600_000


def reconnect_delay(retry_ms: int | None, failures: int) -> float:
    """Seconds before reconnecting: at least the server's ``retry``, with exponential backoff
    (0.25 s doubling, capped at 10 s) and jitter after failures."""
    # A server's retry is capped at an hour: a longer one (or one of hundreds of digits) would
    # overflow the wait, and a stream that long gone is better re-opened.
    floor = min(retry_ms, MAX_RECONNECT_MS) / 1000.0 if retry_ms is not None else 0.0
    if failures == 0:
        return max(floor, 0.1)
    backoff = min(0.25 * 2.0 ** (failures - 1), 10.0) * (0.5 + random.random() / 2)
    return max(floor, backoff)


# --- x-mcp-header (2026-07-28, checklist §8.6): see protocol/param_headers.py -------------

param_header_map = header_map


def param_headers(mapping: Mapping[tuple[str, ...], str], arguments: Any) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for one call's ``arguments``."""
    headers: dict[str, str] = {}
    for path, token in mapping.items():
        text = header_text(argument_at(arguments, path))
        if text is not None:  # absent, null, or not a primitive: no header
            headers[f"Mcp-Param-{token}"] = encode_header_value(text)
    return headers


def learn_param_headers(data: bytes, maps: dict[Any, dict[tuple[str, ...], str]]) -> None:
    """Update ``maps`` (tool name -> ``param_header_map``) from one ``tools/list`` answer."""
    try:
        tools = decode_message(data).get("result", {}).get("tools", [])
        for tool in tools:
            mapping = param_header_map(tool.get("inputSchema"))
            if mapping:
                maps[tool.get("name")] = mapping
            else:
                maps.pop(tool.get("name"), None)
    except (ValueError, AttributeError, TypeError):
        pass  # a malformed answer: the session reports it


class Countdown:
    """Calls ``action`` on the ``n``-th call (from whichever thread makes it)."""

    def __init__(self, n: int, action: Any) -> None:
        self._n = n
        self._action = action
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self._n -= 1
            last = self._n == 0
        if last:
            self._action()
