"""Every exception mcp_lite raises, in one tree under ``McpError`` (drawn in
docs/reference/errors.md); every error pickles (its constructor arguments are kept in
``args``), so it survives ``multiprocessing``, ``concurrent.futures`` and Celery result
backends.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthRequired",
    "CommandNotFound",
    "ConfigError",
    "ConnectError",
    "ConnectionClosed",
    "HeaderMismatch",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LocalProtocolError",
    "McpError",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingClientCapability",
    "ParseError",
    "PermissionDenied",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestCancelled",
    "RequestTimeout",
    "ResourceNotFound",
    "ServerDisabled",
    "ServerExitedAtStart",
    "SessionExpired",
    "RpcError",
    "SkillVerificationError",
    "ToolError",
    "TransportError",
    "UnknownOption",
    "UnsupportedProtocolVersion",
    "UnsupportedVersionError",
    "UrlElicitationRequired",
    "rpc_error_from_wire",
]


class McpError(Exception):
    """Root of every mcp_lite error. ``str(err)`` is a complete, human-readable sentence."""

    # The HTTP status of the refusal it reports, when one did (a headersHelper's server is
    # reconnected with fresh headers after a 401 or 403); not kept across pickling.
    _http_status: int | None = None

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# --- transport -------------------------------------------------------------------------


class TransportError(McpError):
    """The connection to the server failed; the request's fate is unknown."""


class ConnectError(TransportError):
    """The server could not be started or reached (bad command, refused connection...)."""


class CommandNotFound(ConnectError):
    """A stdio server's command does not exist or cannot be executed. Permanent: retrying
    cannot help, so the Hub marks the server failed at once instead of backing off."""

    permanent = True


class ConnectionClosed(TransportError):
    """The server went away. For stdio, ``exit_code`` and ``stderr_tail`` say why."""

    def __init__(
        self, message: str = "", exit_code: int | None = None, stderr_tail: str = ""
    ) -> None:
        full = message
        if exit_code is not None and "exit code" not in message:
            full += f" (exit code {exit_code})"
        if stderr_tail and stderr_tail not in message:  # not "stderr": a server may be named so
            full += f"; stderr tail:\n{stderr_tail}"
        super().__init__(full)
        self.args = (message, exit_code, stderr_tail)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class SessionExpired(ConnectionClosed):
    """The server forgot our session (HTTP 404 on a known session id). The client opens a
    new session and retries the call once; the caller sees this only if that fails too."""


class RequestTimeout(TransportError, TimeoutError):
    """No answer before the deadline. Also a builtin ``TimeoutError``."""

    def __init__(self, message: str = "", timeout: float | None = None) -> None:
        super().__init__(message)
        self.args = (message, timeout)
        self.timeout = timeout


class RequestCancelled(McpError):
    """The caller withdrew the request (``cancel_event`` set, ``Hub.submit`` future
    cancelled); the server was told with ``notifications/cancelled`` (or, on 2026-07-28
    HTTP, by closing the request's stream). A cancelled ``submit()`` future raises
    ``concurrent.futures.CancelledError`` instead, as every ``Future`` does."""


# --- protocol --------------------------------------------------------------------------


class ProtocolError(McpError):
    """A message broke the protocol."""


class LocalProtocolError(ProtocolError):
    """We (the caller or mcp_lite) tried something the protocol does not allow."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol does not allow."""


class MessageTooLarge(RemoteProtocolError):
    """A message was larger than ``max_size`` bytes; ``head`` holds its first bytes.

    ``response_id`` is the message's own top-level response id when the transport scanned the
    whole message for it (``scanned``): the one call it answers. Transports that kept only
    the head leave ``scanned`` false. ``request_id``: the id of a request from the peer that
    was too large (so that it can be refused).
    """

    def __init__(
        self,
        message: str = "",
        max_size: int = 0,
        head: bytes = b"",
        response_id: int | str | None = None,
        scanned: bool = False,
        request_id: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.args = (message, max_size, head, response_id, scanned, request_id)
        self.max_size = max_size
        self.head = head
        self.response_id = response_id
        self.scanned = scanned
        self.request_id = request_id

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.args == self.args

    def __hash__(self) -> int:
        return hash(self.args)


class UnsupportedProtocolVersion(RemoteProtocolError):
    """The server answered with a protocol version mcp_lite does not speak."""

    def __init__(
        self, message: str = "", offered: str = "", supported: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.args = (message, offered, supported)
        self.offered = offered
        self.supported = supported


class RpcError(ProtocolError):
    """The peer answered a request with a JSON-RPC error object.

    Attributes:
        code: the JSON-RPC error code (an int).
        message: the peer's message.
        data: the optional ``data`` member, as parsed JSON.
    """

    default_code: int = 0

    def __init__(self, message: str = "", code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.code = self.default_code if code is None else code
        self.data = data
        self.args = (message, self.code, data)

    def __str__(self) -> str:
        return f"{self.message} (JSON-RPC error {self.code})"

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this error."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class ParseError(RpcError):
    default_code = -32700


class InvalidRequest(RpcError):
    default_code = -32600


class MethodNotFound(RpcError):
    default_code = -32601


class InvalidParams(RpcError):
    default_code = -32602


class InternalError(RpcError):
    default_code = -32603


class ResourceNotFound(RpcError):
    default_code = -32002


class UrlElicitationRequired(RpcError):
    """-32042 (2025-11-25): ``data["elicitations"]`` lists URL elicitations to complete first."""

    default_code = -32042


class HeaderMismatch(RpcError):
    default_code = -32020


class MissingClientCapability(RpcError):
    default_code = -32021


class UnsupportedVersionError(RpcError):
    """-32022 (2026-07-28): ``data["supported"]`` lists the versions the server speaks."""

    default_code = -32022


_BY_CODE: dict[int, type[RpcError]] = {
    cls.default_code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        ResourceNotFound,
        UrlElicitationRequired,
        HeaderMismatch,
        MissingClientCapability,
        UnsupportedVersionError,
    )
}


def rpc_error_from_wire(error: Any) -> RpcError:
    """Build the matching ``RpcError`` subclass from a JSON-RPC ``error`` member.

    A malformed member (not an object, code not an int) still gives an ``RpcError``
    that says so, never a crash.
    """
    if not isinstance(error, dict):
        return RpcError(f"malformed JSON-RPC error: {error!r}"[:500], -32603)
    code = error.get("code")
    message = error.get("message")
    if not isinstance(message, str):
        message = repr(message)
    if not isinstance(code, int) or isinstance(code, bool):
        return RpcError(message, -32603, error.get("data"))
    cls = _BY_CODE.get(code, RpcError)
    return cls(message, code, error.get("data"))


# --- results, auth, config, permissions --------------------------------------------------


class ToolError(McpError):
    """A tool ran and reported failure (``isError: true``). ``result`` is the full result."""

    def __init__(self, message: str = "", result: Any = None) -> None:
        super().__init__(message)
        self.args = (message, result)
        self.result = result


class SkillVerificationError(McpError):
    """A skill's file did not match what its entry declares (size, digest, frontmatter, or
    not listed at all); the content was not used. ``uri`` names the file."""

    def __init__(self, message: str = "", uri: str | None = None) -> None:
        super().__init__(message)
        self.args = (message, uri)
        self.uri = uri


class AuthRequired(McpError):
    """The server needs authorization (HTTP 401) that mcp_lite could not obtain by itself."""

    def __init__(self, message: str = "", server: str | None = None) -> None:
        super().__init__(message)
        self.args = (message, server)
        self.server = server


class ConfigError(McpError, ValueError):
    """Bad configuration or usage: a wrong target, an invalid option, a bad config file."""


class ServerDisabled(ConnectError, ConfigError):
    """A Hub server that its configuration keeps from starting: not trusted, disabled in its
    entry, or blocked by a server policy. Both a ``ConnectError`` (it cannot be reached) and
    a ``ConfigError`` (the fix is in the configuration)."""


class ServerExitedAtStart(ConnectError, ConnectionClosed):
    """The server went away while connecting (a stdio server that exited before it answered
    the handshake, a connection closed during it). A ``ConnectError``, since the server could
    not be reached, and still a ``ConnectionClosed`` (what it was before), with ``exit_code``
    and ``stderr_tail``."""


class UnknownOption(ConfigError, TypeError):
    """A keyword option that does not exist (``connect(target, timout=2)``). Its message
    names the function and the closest known option. Also a builtin ``TypeError``, what
    Python raises for an unexpected keyword argument."""


class PermissionDenied(McpError):
    """A permission rule or the permission handler refused a tool call."""

    def __init__(self, message: str = "", tool: str | None = None) -> None:
        super().__init__(message)
        self.args = (message, tool)
        self.tool = tool
