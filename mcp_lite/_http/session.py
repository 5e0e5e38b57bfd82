"""The pooled ``requests`` session of the HTTP transports and one exchange on it: redirects are
followed only within the origin (307/308, at most three times), the cheaper paths (``fast_post``
on a kept-alive TCP connection, ``unix_client`` for ``unix://``) are taken when nothing of
``requests``' per-request machinery applies, and closing leaves no socket behind. How the paths
fit together: ``docs/explanation/inside-http.md``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.cookies import extract_cookies_to_jar

from .._secrets import redact_url
from .._version import __version__
from ..errors import ConnectError
from . import fast_post
from . import peer as _http_peer
from . import slots as _http_abort
from . import unix as _http_unix
from . import unix_client as _http_lean
from .auth import Auth
from .body import drain
from .retry import Retry
from .slots import AbortingAdapter

__all__ = [
    "Countdown",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "HttpOptions",
    "close_session",
    "make_session",
    "origin",
    "request",
    "request_whole",
]

log = logging.getLogger("mcp_lite.http")

DEFAULT_CONNECT_TIMEOUT = 10.0
# Read timeout of a POST: the longest silence between two bytes of a response. The session
# enforces each request's own deadline; this only bounds a worker stuck on a dead socket.
DEFAULT_READ_TIMEOUT = 600.0
_REDIRECTS = (301, 302, 303, 307, 308)


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
    if unix:  # its exchanges skip requests (``_http.unix_client``)
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
    comes back as a ``unix_client.Answer`` (no ``requests.Response``; see
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
    A ``unix://`` URL goes through the session's ``_http.unix_client`` when it applies.
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
        # connection of the same pool (``_http.fast_post``); None when it does not apply.
        pool = adapter.get_connection_with_tls_context(prepared, session.verify, None, session.cert)
        path = adapter.request_url(prepared, None)
        host = "host" in ours or any(low == "host" for _, low, _ in base)
        response = fast_post.post(pool, path, merged, data, timeout, prepared, host)
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
