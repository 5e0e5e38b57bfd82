"""What every OAuth step shares: URL rules (``https``, or ``http`` on loopback; loopback
redirect URIs), small HTTP exchanges that follow no redirect, hold a bounded body and end by
their deadline (each in an ``_http`` ``Slot``, shut down by the process timer), and errors that
name the step and the URL but never a secret. See ``docs/explanation/inside-http.md`` ("OAuth").
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from .._deadline import Deadline
from .._http.causes import network_cause
from .._http.slots import AbortingAdapter, Slot
from .._secrets import is_loopback_host, redact_text, redact_url, scrub
from .._version import __version__
from ..errors import AuthRequired, ConfigError, ConnectError, RequestTimeout
from ._policy import UrlPolicy

log = logging.getLogger("mcp_lite.auth")

DEFAULT_TIMEOUT = 30.0
_MAX_BODY = 1024 * 1024
_EXCERPT = 200


def require_secure(url: str, what: str) -> str:
    """``url`` when it is https, or http on loopback; else ``AuthRequired``.

    Also refuses URLs with credentials in them, fragments and any other scheme
    (``javascript:``, ``file:``, ``data:`` ...).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        raise AuthRequired(f"the {what} URL {redact_url(url)!r} is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.hostname:
        raise AuthRequired(f"the {what} URL must be an http(s) URL, got {redact_url(url)!r}")
    if scheme == "http" and not is_loopback_host(parts.hostname):
        raise AuthRequired(
            f"the {what} URL {redact_url(url)!r} must use https (plain http is accepted "
            "only on localhost)"
        )
    if parts.username or parts.password:
        raise AuthRequired(f"the {what} URL must not carry credentials")
    if parts.fragment:
        raise AuthRequired(f"the {what} URL {redact_url(url)!r} must not have a fragment")
    return url


def require_loopback_redirect(uri: str) -> str:
    """A redirect URI we can accept: ``http`` on a loopback host; else ``ConfigError``."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "http" or not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"redirect_uri must be a loopback http URL such as "
            f"http://127.0.0.1:8976/callback, got {redact_url(uri)!r}"
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


class OAuthError(AuthRequired):
    """An authorization server refused a request with an OAuth error answer; ``code`` is its
    ``error`` (``invalid_grant``...), or ``HTTP <status>`` when it gave none."""

    code: str = ""


# --- total deadlines -------------------------------------------------------------------------

# The deadline of the OAuth operation running on this thread (``Http.limit``), for code it
# calls that has no ``Http`` of its own (``fetch_redirect`` as the authorization handler).
_operation = threading.local()


def operation_deadline() -> Deadline | None:
    """The deadline of the OAuth operation this thread is inside of, if any."""
    return getattr(_operation, "deadline", None)


def _new_session() -> requests.Session:
    session = requests.Session()
    adapter = AbortingAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class Http:
    """The HTTP side of OAuth: total deadlines, no redirects followed, bounded JSON bodies,
    errors as ``AuthRequired`` (``RequestTimeout`` when the deadline passed).

    Without a ``session`` every exchange uses a short-lived one that is closed at once (OAuth
    traffic is rare; nothing stays open between logins). A given ``session`` is used as is
    (proxies, CA bundle, retries of your choosing) and never closed here; its exchanges are
    cut at the deadline only through an ``_http.slots.AbortingAdapter`` mounted on it
    (otherwise each read is still bounded by the time left).
    """

    def __init__(
        self, session: requests.Session | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.session = session
        self.timeout = timeout
        self._limits = threading.local()
        # Where the MCP server's OAuth documents may lead (``_policy``); set by ``OAuth``
        # once it knows the server. None: only ``require_secure`` (no server to judge by).
        self.policy: UrlPolicy | None = None
        # The DPoP key (``dpop.DPoPKey``) that signs a proof for every token request, once
        # the OAuth object using this context has chosen DPoP; None for plain bearer tokens.
        self.dpop: Any = None

    @contextlib.contextmanager
    def limit(self, deadline: Deadline | None) -> Iterator[None]:
        """Within the block, exchanges on this thread also end by ``deadline`` (None: no
        limit beyond ``timeout``); an enclosing limit that ends earlier still holds."""
        previous: Deadline | None = getattr(self._limits, "deadline", None)
        if previous is not None and (deadline is None or previous.at <= deadline.at):
            deadline = previous
        self._limits.deadline = deadline
        outer = operation_deadline()
        _operation.deadline = deadline
        try:
            yield
        finally:
            self._limits.deadline = previous
            _operation.deadline = outer

    def deadline(self) -> Deadline | None:
        """The deadline set by ``limit`` on this thread (None: no such deadline)."""
        return getattr(self._limits, "deadline", None)

    def remaining(self) -> float | None:
        """Seconds left before the deadline set by ``limit`` (None: no such deadline)."""
        deadline = self.deadline()
        return None if deadline is None else deadline.at - time.monotonic()

    def check(self, url: str, what: str) -> str:
        """``url`` when this context's policy lets the MCP server's documents lead there
        (``_policy.UrlPolicy.check``); without a policy, when it is secure."""
        require_secure(url, what)
        if self.policy is not None:
            left = self.remaining()
            self.policy.check(url, what, self.timeout if left is None else max(0.0, left))
        return url

    def exchange(
        self,
        method: str,
        url: str,
        what: str,
        *,
        secrets: Iterable[str | None] = (),
        configured: bool = False,
        **kwargs: Any,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One request: status, headers and at most ``_MAX_BODY + 1`` bytes of body.

        ``url`` passes the policy first (``check``) unless the user ``configured`` it
        (an identity provider's endpoint): nothing is opened for a refused URL.

        Raises:
            RequestTimeout: the exchange's deadline passed (a total, not per read).
            AuthRequired: the URL is refused by the policy.
            ConnectError: the network failed.
        """
        shown = redact_url(url)
        deadline = self.deadline()
        budget = self.timeout if deadline is None else deadline.bound(self.timeout)
        if budget <= 0 and deadline is not None:
            raise deadline.error("authorizing", f"no time was left for {what} at {shown}")
        if budget <= 0:
            raise RequestTimeout(f"authorizing: no time left for {what} at {shown}", 0.0)
        if not configured and self.policy is not None:
            self.policy.check(url, what, budget)
        headers = {"User-Agent": f"mcp-lite/{__version__}", **kwargs.pop("headers", {})}
        own = self.session is None
        session = _new_session() if own else self.session
        assert session is not None
        # The caller's deadline itself when it comes first, else the step's own cap; the
        # process timer shuts the exchange's socket down then.
        slot = Slot(Deadline.after(budget) if deadline is None else deadline.earlier(self.timeout))
        try:
            with (
                slot.active(),
                session.request(
                    method,
                    url,
                    headers=headers,
                    timeout=(budget, budget),
                    allow_redirects=False,
                    stream=True,
                    **kwargs,
                ) as response,
            ):
                raw = response.raw.read(_MAX_BODY + 1, decode_content=True) if response.raw else b""
                if slot.aborted:
                    raise OSError("deadline")
                return response.status_code, response.headers, raw
        except Exception as exc:
            if slot.aborted or isinstance(exc, requests.Timeout):
                what_failed = f"{what} at {shown} got no answer"
                if deadline is not None and budget < self.timeout:
                    raise deadline.error("authorizing", what_failed) from None
                raise RequestTimeout(
                    f"authorizing: {what_failed} within its {budget:.3g} s limit", budget
                ) from None
            if isinstance(exc, (requests.RequestException, OSError)) or _is_urllib3(exc):
                # unreachable is a connection failure (CLI exit 3), not a need for credentials
                raise ConnectError(
                    scrub(
                        f"the {what} request to {shown} failed: {redact_text(network_cause(exc))}",
                        secrets,
                    )
                ) from None
            raise
        finally:
            slot.release()
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
        require_secure(url, what)  # the policy is checked by ``exchange``
        shown = redact_url(url)
        status, _, raw = self.exchange(
            "GET", url, what, headers={"Accept": "application/json", **(headers or {})}
        )
        if 300 <= status < 500:
            log.debug("%s not at %s (HTTP %s)", what, shown, status)
            return None
        if status != 200:
            raise AuthRequired(f"the {what} at {shown} answered HTTP {status}")
        return _json_object(raw, f"the {what} at {shown}")

    def post(
        self,
        url: str,
        what: str,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        configured: bool = False,
    ) -> tuple[int, dict[str, Any]]:
        """POST a form (or a JSON ``body``); returns the status and the JSON object answer
        (empty when the body is not JSON). ``configured``: see ``exchange``."""
        status, _, data = self.post_with_headers(
            url, what, form=form, body=body, headers=headers, secrets=secrets, configured=configured
        )
        return status, data

    def post_with_headers(
        self,
        url: str,
        what: str,
        *,
        form: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        configured: bool = False,
    ) -> tuple[int, Mapping[str, str], dict[str, Any]]:
        """``post``, with the response headers too (a ``DPoP-Nonce`` comes in one)."""
        require_secure(url, what)
        send_headers = {"Accept": "application/json", **(headers or {})}
        payload: dict[str, Any] = (
            {"json": dict(body)} if body is not None else {"data": dict(form or {})}
        )
        status, reply_headers, raw = self.exchange(
            "POST",
            url,
            what,
            secrets=secrets,
            configured=configured,
            headers=send_headers,
            **payload,
        )
        try:
            data = _json_object(raw, f"the {what} answer from {redact_url(url)}")
        except AuthRequired:
            data = {}
        return status, reply_headers, data


def _is_urllib3(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("urllib3")


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    if len(raw) > _MAX_BODY:
        raise AuthRequired(f"{what} is larger than {_MAX_BODY} bytes")
    try:
        value = json.loads(raw.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError, RecursionError):  # (nested too deep: no JSON)
        raise AuthRequired(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise AuthRequired(f"{what} is not a JSON object")
    return value


def oauth_error(
    status: int, data: Mapping[str, Any], what: str, secrets: Iterable[str | None] = ()
) -> OAuthError:
    """An ``AuthRequired`` for an OAuth error answer (RFC 6749 §5.2): code and description,
    bounded, with secrets scrubbed."""
    code = str(data.get("error") or f"HTTP {status}")[:_EXCERPT]
    description = str(data.get("error_description") or "")[:_EXCERPT]
    text = f"{what} was refused: {code}" + (f" ({description})" if description else "")
    error = OAuthError(scrub(text, secrets))
    error.code = code
    return error
