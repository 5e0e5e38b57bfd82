"""JSON-RPC 2.0 messages, sans-IO: building them and sorting incoming frames into events, where a
frame that is not valid JSON-RPC never raises but becomes an ``Invalid`` event carrying the
call's id when it has one (see docs/explanation/protocol.md, "Framing and attribution").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from .._accel import ResponseIdScanner, decode_message
from ..errors import RpcError, rpc_error_from_wire

__all__ = [
    "ErrorResponse",
    "Incoming",
    "Invalid",
    "Notification",
    "PendingTable",
    "Request",
    "RequestId",
    "Response",
    "make_error",
    "make_notification",
    "make_request",
    "make_result",
    "parse_frame",
]

RequestId = int | str


def make_request(
    request_id: RequestId, method: str, params: dict[str, Any] | None
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_result(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def make_error(request_id: RequestId | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


# --- incoming events -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Response:
    """A successful answer to one of our requests."""

    id: RequestId
    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """An error answer. ``id`` is None when the peer could not read our id (2025-11-25)."""

    id: RequestId | None
    error: RpcError


@dataclass(frozen=True, slots=True)
class Request:
    """A request from the peer that we must answer with the same id."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Invalid:
    """Something that is not a JSON-RPC message; ``reason`` says why, ``raw`` is an excerpt.
    ``id``: the request it answers, when its own top-level id says so (else None)."""

    reason: str
    raw: str = ""
    id: RequestId | None = None
    request_id: RequestId | None = None  # a request from the peer we could not read


Incoming = Response | ErrorResponse | Request | Notification | Invalid


def _excerpt(data: bytes | str, limit: int = 200) -> str:
    text = data if isinstance(data, str) else data[:limit].decode("utf-8", "replace")
    return text[:limit]


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def classify(message: Any) -> Incoming:
    """Sort one decoded JSON value into an event."""
    if not isinstance(message, dict):
        return Invalid("not a JSON object", _excerpt(repr(message)))
    method = message.get("method")
    # A broken message that is no request has still told us which call it answers.
    answers = message.get("id") if method is None and _valid_id(message.get("id")) else None
    if message.get("jsonrpc") != "2.0":
        return Invalid("missing jsonrpc: '2.0'", _excerpt(repr(message)), answers)
    if isinstance(method, str):
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return Invalid(f"params of {method!r} is not an object", _excerpt(repr(message)))
        if "id" in message:
            if not _valid_id(message["id"]):
                return Invalid("request id is not a string or integer", _excerpt(repr(message)))
            return Request(message["id"], method, params)
        return Notification(method, params)
    if "error" in message:
        request_id = message.get("id")
        return ErrorResponse(
            request_id if _valid_id(request_id) else None, rpc_error_from_wire(message["error"])
        )
    if "result" in message:
        if not _valid_id(message.get("id")):
            return Invalid("response id is not a string or integer", _excerpt(repr(message)))
        result = message["result"]
        if not isinstance(result, dict):
            return Invalid("result is not an object", _excerpt(repr(message)), message["id"])
        return Response(message["id"], result)
    return Invalid("neither request, notification nor response", _excerpt(repr(message)), answers)


def parse_frame(data: bytes, *, allow_batch: bool = True) -> list[Incoming]:
    """Decode one frame (a JSON object, or a batch array) into events; never raises.

    Args:
        data: the frame's bytes, as one transport delivered them.
        allow_batch: accept a JSON array of messages (only 2025-03-26 defines batches, but
            being lenient costs nothing, so the session passes True unless it must refuse).
    """
    try:
        decoded = decode_message(data)
    except ValueError as exc:
        scanner = ResponseIdScanner()
        scanner.feed(data)
        reason = f"invalid JSON: {exc}"
        return [Invalid(reason, _excerpt(data), scanner.response_id, scanner.request_id)]
    if isinstance(decoded, list):
        if not allow_batch:
            return [Invalid("batch received but batches are not allowed", _excerpt(data))]
        if not decoded:
            return [Invalid("empty batch", _excerpt(data))]
        return [classify(item) for item in decoded]
    return [classify(decoded)]


# --- the pending-request table -------------------------------------------------------------

T = TypeVar("T")


class PendingTable(dict[RequestId, T]):
    """Requests we sent and still wait for, by id. Ids are allocated here, never reused.

    A dict (id -> entry), so ``len``, ``in`` and ``get`` cost no Python call on the hot path.
    Not thread-safe by itself: the session guards it with its own lock.
    """

    __slots__ = ("_next_id",)

    def __init__(self) -> None:
        super().__init__()
        self._next_id = 0

    def register(self, entry: T) -> int:
        """Add ``entry`` under a new id, and return the id."""
        self._next_id += 1
        request_id = self._next_id
        self[request_id] = entry
        return request_id

    @property
    def issued(self) -> int:
        """How many ids were handed out: it moves with every request sent."""
        return self._next_id

    def pop(self, request_id: RequestId | None) -> T | None:  # type: ignore[override]
        """The entry for ``request_id``, removed; None when there is none."""
        if request_id is None:
            return None
        entry = dict.pop(self, request_id, None)
        if entry is None and type(request_id) is str and request_id.isdigit():
            # Some peers echo integer ids back as strings; be lenient.
            entry = dict.pop(self, int(request_id), None)
        return entry

    def drain(self) -> list[T]:
        """Remove and return every entry (used when the connection dies)."""
        entries = list(self.values())
        self.clear()
        return entries
