"""Tokens on HTTP requests: the ``Auth`` seam (``TokenAuth`` wraps a callable or a string;
``mcp_lite.auth.OAuth`` is one) and ``send_authorized``, which presents the token, refreshes once
after a 401, retries once with a new DPoP nonce and steps up a bounded number of times after a
403 ``insufficient_scope``, all within the caller's ``Deadline``.
"""

from __future__ import annotations

import inspect
import math
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import requests

from .. import _fork
from .._deadline import Deadline
from ..errors import ConfigError

__all__ = [
    "Auth",
    "MAX_STEP_UPS",
    "TokenAuth",
    "as_auth",
    "bearer",
    "observe",
    "presentation",
    "send_authorized",
]


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
