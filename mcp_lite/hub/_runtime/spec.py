"""A configured server's identity: ``Spec`` (name, target, scope, the settings that
make a connection) and its memo key, so an unchanged entry keeps its connection
across ``update()``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

__all__ = ["REMOTE_TYPES", "Spec", "memo_key", "make_spec"]


REMOTE_TYPES = frozenset({"http", "sse", "ws", "sse-ide", "ws-ide", "proxy"})


@dataclass(frozen=True)
class Spec:
    """What the Hub needs of one configured server (built from a ``ServerEntry``)."""

    name: str
    scope: str
    type: str
    target: Any = field(repr=False)  # headers, tokens, URL queries: never in a repr
    source: str = "<code>"
    disabled_reason: str | None = None
    error: str | None = None
    key: str = field(default="", compare=False)
    timeout: float | None = None
    # The entry's own recycle settings (0: off for this server); not in ``key``: changing
    # them keeps the connection.
    idle_timeout: float | None = None
    max_lifetime: float | None = None
    # The entry's "extensions" ({id: settings}), laid over the Hub's; in ``key``: they are
    # declared when connecting.
    extensions: dict[str, dict[str, Any]] | None = None

    @property
    def remote(self) -> bool:
        return self.type in REMOTE_TYPES

    @property
    def in_process(self) -> bool:
        return self.type == "sdk"

    @property
    def auth_key(self) -> str:
        """The needs-auth cache key: the name and a hash of the config (no secrets kept)."""
        return f"{self.name}:{hashlib.sha256(self.key.encode()).hexdigest()[:16]}"


def memo_key(name: str, target: Any) -> str:
    """``name`` + the canonical JSON of its target; an in-process server by identity."""
    from ...server import Server

    if isinstance(target, Server):
        return f"{name}\x00sdk:{id(target)}"

    def default(value: Any) -> Any:
        if isinstance(value, Server):
            return f"<sdk {id(value)}>"
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        return f"<{type(value).__qualname__} {id(value)}>"

    return (
        name + "\x00" + json.dumps(target, sort_keys=True, separators=(",", ":"), default=default)
    )


def make_spec(
    name: str,
    scope: str,
    target: Any,
    *,
    type: str | None = None,
    source: str = "<code>",
    disabled_reason: str | None = None,
    error: str | None = None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    max_lifetime: float | None = None,
    extensions: dict[str, dict[str, Any]] | None = None,
) -> Spec:
    kind = type or _type_of(target)
    key = memo_key(name, target) if error is None else f"{name}\x00error"
    if timeout is not None:
        key += f"\x00timeout={timeout!r}"
    if extensions:
        key += "\x00extensions=" + json.dumps(extensions, sort_keys=True)
    return Spec(
        name,
        scope,
        kind,
        target,
        source,
        disabled_reason,
        error,
        key,
        timeout,
        idle_timeout,
        max_lifetime,
        extensions,
    )


def _type_of(target: Any) -> str:
    from ...server import Server

    if isinstance(target, Server):
        return "sdk"
    if isinstance(target, Mapping):
        kind = target.get("type")
        if kind:
            return str(kind)
        return "stdio" if "command" in target else "http"
    if isinstance(target, str) and "://" in target:
        return "ws" if target.lower().startswith(("ws:", "wss:")) else "http"
    return "stdio"


def _has_helper(spec: Spec) -> bool:
    """The server's headers come from a headersHelper, run at each connect."""
    return isinstance(spec.target, Mapping) and bool(spec.target.get("headersHelper"))
