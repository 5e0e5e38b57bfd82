"""The MCP session rules a client follows in both eras, as pure functions and small state
objects: the handshake and version negotiation, the 2026-07-28 ``_meta``, discover probe and
``input_required`` rounds, pagination and the capabilities we declare (see
docs/explanation/protocol.md, "Two eras").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import (
    LocalProtocolError,
    RemoteProtocolError,
    UnsupportedProtocolVersion,
    UnsupportedVersionError,
)
from . import versions as v
from .jsonrpc import ErrorResponse, Response
from .param_headers import HEADER_TOKEN, HEADER_TYPES

__all__ = [
    "DiscoverOutcome",
    "Era",
    "check_method_allowed",
    "input_requests",
    "Pager",
    "SessionInfo",
    "accept_initialize",
    "add_stateless_meta",
    "client_capabilities",
    "discover_outcome",
    "initialize_params",
    "is_input_required",
    "mcp_header_problem",
    "retry_params",
]

Era = Literal["handshake", "stateless"]


@dataclass
class SessionInfo:
    """What the client learned about the server when it connected."""

    protocol_version: str
    era: Era
    server_info: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        value = self.capabilities.get(name)
        if value is None:
            return False
        if sub is None:
            return True
        return isinstance(value, dict) and bool(value.get(sub))


def client_capabilities(
    *,
    sampling: bool,
    elicitation: bool,
    roots: bool,
    task_requests: dict[str, Any] | None = None,
    extensions: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The capabilities we declare: only what a handler is there to honour.

    ``task_requests``: the 2025-11-25 ``tasks`` capability (we run the server's sampling /
    elicitation requests as tasks); ``extensions``: ``{id: settings}``, declared as given
    in every revision (SEP-2133 allows it in ``initialize`` too).
    """
    caps: dict[str, Any] = {}
    if roots:
        caps["roots"] = {"listChanged": True}
    if sampling:
        caps["sampling"] = {}
    if elicitation:
        caps["elicitation"] = {"form": {}, "url": {}}
    if task_requests is not None and (sampling or elicitation):
        requests = {
            k: v
            for k, v in task_requests.get("requests", {}).items()
            if (k == "sampling" and sampling) or (k == "elicitation" and elicitation)
        }
        caps["tasks"] = {**task_requests, "requests": requests}
    if extensions:
        caps["extensions"] = extensions
    return caps


def _capabilities_for(version: str, caps: dict[str, Any]) -> dict[str, Any]:
    """Shape capabilities for an older revision (2025-06-18 knew only ``elicitation: {}``)."""
    if "elicitation" in caps and version in (v.V2025_06_18, v.V2025_03_26, v.V2024_11_05):
        caps = {**caps, "elicitation": {}}
    return caps


# --- handshake era ---------------------------------------------------------------------------


def initialize_params(
    version: str, capabilities: dict[str, Any], client_info: dict[str, Any]
) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": _capabilities_for(version, capabilities),
        "clientInfo": client_info,
    }


def accept_initialize(result: dict[str, Any], *, pinned: str | None) -> SessionInfo:
    """Check an ``InitializeResult`` and say what was agreed.

    Raises:
        UnsupportedProtocolVersion: the server answered with a version we do not speak (or,
            when ``pinned``, a version other than the pinned one). The caller disconnects.
        RemoteProtocolError: the result is not an InitializeResult at all.
    """
    offered = result.get("protocolVersion")
    if not isinstance(offered, str):
        raise RemoteProtocolError("initialize result has no protocolVersion")
    acceptable = (pinned,) if pinned else v.HANDSHAKE_VERSIONS
    if offered not in acceptable:
        raise UnsupportedProtocolVersion(
            f"server chose protocol version {offered!r}; mcp_lite "
            f"{'was pinned to' if pinned else 'supports'} {', '.join(acceptable)}",
            offered,
            tuple(acceptable),
        )
    capabilities = result.get("capabilities")
    server_info = result.get("serverInfo")
    instructions = result.get("instructions")
    return SessionInfo(
        protocol_version=offered,
        era="handshake",
        server_info=server_info if isinstance(server_info, dict) else {},
        capabilities=capabilities if isinstance(capabilities, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
    )


# --- stateless era ---------------------------------------------------------------------------


def add_stateless_meta(
    params: dict[str, Any] | None,
    *,
    version: str,
    capabilities: dict[str, Any],
    client_info: dict[str, Any],
    log_level: str | None = None,
) -> dict[str, Any]:
    """A copy of ``params`` with the 2026-07-28 ``_meta`` keys every request carries."""
    params = dict(params or {})
    meta = dict(params.get("_meta") or {})
    meta[v.META_PROTOCOL_VERSION] = version
    meta[v.META_CLIENT_CAPABILITIES] = capabilities
    meta[v.META_CLIENT_INFO] = client_info
    if log_level is not None:
        meta[v.META_LOG_LEVEL] = log_level
    params["_meta"] = meta
    return params


@dataclass(frozen=True)
class DiscoverOutcome:
    """What a ``server/discover`` probe told us.

    ``kind`` is ``"stateless"`` (a modern server: ``session`` holds what it said),
    ``"retry"`` (a modern server that wants another version: ``version``), or
    ``"handshake"`` (anything else: fall back to ``initialize``).
    """

    kind: Literal["stateless", "retry", "handshake"]
    session: SessionInfo | None = None
    version: str | None = None


def discover_outcome(event: Response | ErrorResponse | None, requested: str) -> DiscoverOutcome:
    """Classify the answer to a ``server/discover`` probe (checklist §8.2).

    ``None`` means the probe timed out. The fallback to the handshake is never keyed to one
    error code: only a recognised modern answer keeps us in the stateless era.

    Raises:
        UnsupportedProtocolVersion: a modern server that speaks no version we speak.
    """
    if isinstance(event, Response):
        result = event.result
        supported = result.get("supportedVersions")
        if not isinstance(supported, list):
            return DiscoverOutcome("handshake")
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        server_info = (meta or {}).get(v.META_SERVER_INFO)
        capabilities = result.get("capabilities")
        instructions = result.get("instructions")
        version = requested if requested in supported else _best_stateless(supported)
        if version is None:
            raise UnsupportedProtocolVersion(
                f"server speaks {supported}; mcp_lite's stateless era speaks "
                f"{', '.join(v.STATELESS_VERSIONS)}",
                str(supported),
                v.STATELESS_VERSIONS,
            )
        return DiscoverOutcome(
            "stateless",
            SessionInfo(
                protocol_version=version,
                era="stateless",
                server_info=server_info if isinstance(server_info, dict) else {},
                capabilities=capabilities if isinstance(capabilities, dict) else {},
                instructions=instructions if isinstance(instructions, str) else None,
            ),
        )
    if isinstance(event, ErrorResponse) and isinstance(event.error, UnsupportedVersionError):
        data = event.error.data if isinstance(event.error.data, dict) else {}
        supported = data.get("supported")
        if isinstance(supported, list):
            version = _best_stateless(supported)
            if version is not None:  # even the one we asked for: a refusal may be transient
                return DiscoverOutcome("retry", version=version)
            if version is None and any(s in v.HANDSHAKE_VERSIONS for s in supported):
                return DiscoverOutcome("handshake")
        raise UnsupportedProtocolVersion(
            f"server refused protocol version {requested!r} and offers {supported!r}",
            str(supported),
            v.SUPPORTED_VERSIONS,
        )
    return DiscoverOutcome("handshake")


def _best_stateless(supported: list[Any]) -> str | None:
    for version in v.STATELESS_VERSIONS:
        if version in supported:
            return version
    return None


# --- multi round-trip requests (2026-07-28) ---------------------------------------------------


def is_input_required(result: dict[str, Any]) -> bool:
    """True for an ``InputRequiredResult``; an absent ``resultType`` means complete.

    Raises:
        RemoteProtocolError: ``resultType`` is present but neither value the spec defines.
    """
    kind = result.get("resultType")
    if kind is None or kind == "complete" or kind == "task":  # "task": the tasks extension
        return False
    if kind == "input_required":
        return True
    raise RemoteProtocolError(f"unknown resultType {kind!r} in a result")


def input_requests(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``inputRequests`` of an InputRequiredResult, validated: ``{key: {method, params}}``."""
    requests = result.get("inputRequests") or {}
    if not isinstance(requests, dict):
        raise RemoteProtocolError("inputRequests is not an object")
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise RemoteProtocolError(f"inputRequests[{key!r}] has no method")
    return requests


def retry_params(
    original: dict[str, Any], result: dict[str, Any], responses: dict[str, Any]
) -> dict[str, Any]:
    """Params for the retry: the original ones plus ``inputResponses`` and, echoed exactly,
    ``requestState`` (left out when the server gave none)."""
    params = {k: val for k, val in original.items() if k not in ("inputResponses", "requestState")}
    if responses:
        params["inputResponses"] = responses
    if "requestState" in result:
        params["requestState"] = result["requestState"]
    return params


# --- x-mcp-header (2026-07-28, checklist §8.6) -----------------------------------------------


def mcp_header_problem(schema: Any) -> str | None:
    """Why a tool's ``x-mcp-header`` annotations are invalid, or None when they are fine.

    An annotation must be a non-empty HTTP token, unique (case-insensitively) within the
    tool, on a ``string``/``integer``/``boolean`` property reachable from the root through
    ``properties`` only. A tool that breaks any rule is left out of ``tools/list``.
    """
    seen: set[str] = set()
    stack: list[tuple[Any, bool]] = [(schema, True)]
    while stack:
        node, reachable = stack.pop()
        if isinstance(node, list):
            stack.extend((item, False) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        if "x-mcp-header" in node:
            token = node["x-mcp-header"]
            if not reachable or node is schema:
                return "x-mcp-header outside a top-level chain of 'properties'"
            if not isinstance(token, str) or not HEADER_TOKEN.match(token):
                return f"x-mcp-header {token!r} is not an HTTP token"
            if token.lower() in seen:
                return f"x-mcp-header {token!r} is used twice"
            if node.get("type") not in HEADER_TYPES:
                return f"x-mcp-header {token!r} is on a {node.get('type')!r} property"
            seen.add(token.lower())
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict) and reachable:
                stack.extend((sub, True) for sub in value.values())
            elif isinstance(value, (dict, list)):
                stack.append((value, False))
    return None


# --- pagination ----------------------------------------------------------------------------------


@dataclass
class Pager:
    """Walks ``nextCursor`` pages: opaque cursors, an empty string is a valid cursor (2026),
    a repeated cursor or more than ``max_pages`` pages is a protocol error, not a loop."""

    method: str
    max_pages: int = 1000
    cursor: str | None = None
    pages: int = 0
    _seen: set[str] = field(default_factory=set)
    done: bool = False

    def params(self, base: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(base or {})
        if self.cursor is not None:
            params["cursor"] = self.cursor
        return params

    def advance(self, result: dict[str, Any]) -> None:
        """Record one page's result; sets ``done`` when there is no next page."""
        self.pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            self.done = True
            return
        if not isinstance(cursor, str):
            raise RemoteProtocolError(f"{self.method}: nextCursor is not a string")
        if cursor in self._seen:
            raise RemoteProtocolError(f"{self.method}: server repeated cursor {cursor[:50]!r}")
        if self.pages >= self.max_pages:
            raise RemoteProtocolError(f"{self.method}: more than {self.max_pages} pages")
        self._seen.add(cursor)
        self.cursor = cursor


def check_method_allowed(method: str, info: SessionInfo) -> None:
    """Refuse locally what the negotiated revision removed (2026-07-28: ping, setLevel...)."""
    if info.era == "stateless" and method in _REMOVED_IN_STATELESS:
        raise LocalProtocolError(
            f"{method} does not exist in protocol {info.protocol_version} (removed in 2026-07-28)"
        )


_REMOVED_IN_STATELESS = frozenset(
    {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "initialize"}
)
