"""``Handlers``: what the client answers and declares (sampling, elicitation, roots, logs,
notifications, a task receiver, extensions), shared by every connection of one Client, and
``fulfil``, which answers one server-to-client request with them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, InvalidParams, MethodNotFound
from ..protocol import session as proto
from ..protocol.skills import SKILLS_EXTENSION
from ..protocol.tasks import TASKS_EXTENSION
from .task_receiver import TaskReceiver

if TYPE_CHECKING:
    from ..protocol.types import Params

__all__ = ["Handlers", "as_params", "fulfil"]

_TASKABLE = frozenset({"sampling/createMessage", "elicitation/create"})


@dataclass
class Handlers:
    """What the client answers and declares; shared by every connection of one Client."""

    client_info: dict[str, Any]
    sampling: Callable[[Params], Any] | None = None
    elicitation: Callable[[Params], Any] | None = None
    roots: list[dict[str, Any]] | None = None
    roots_handler: Callable[[], Any] | None = None
    log_handler: Callable[[Params], Any] | None = None
    notification_handler: Callable[[str, Params], Any] | None = None
    log_level: str | None = None  # 2026-07-28: sent in _meta on every request
    # The Client's own look at every notification (cache invalidation), before delivery.
    observer: Callable[[str, dict[str, Any]], None] | None = None
    # 2025-11-25: runs the server's task-augmented sampling/elicitation (connect(task_receiver=))
    task_receiver: TaskReceiver | None = None
    # connect(extensions=): {id: settings}, checked, declared as given over our own
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def capabilities(self) -> dict[str, Any]:
        return proto.client_capabilities(
            sampling=self.sampling is not None,
            elicitation=self.elicitation is not None,
            roots=self.roots is not None or self.roots_handler is not None,
            task_requests=TaskReceiver.CAPABILITY if self.task_receiver is not None else None,
            extensions={**_OWN_EXTENSIONS, **self.extensions},
        )


# What mcp_lite itself supports: call_tool follows a task result by itself, and the skills
# calls are there (servers that serve skills only to a client declaring them exist).
_OWN_EXTENSIONS: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}, SKILLS_EXTENSION: {}}


def fulfil(h: Handlers, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Answer one server-to-client request (or one 2026 ``inputRequests`` entry) with
    ``h``'s handlers."""
    if method == "ping":
        return {}
    if h.task_receiver is not None:
        if method.startswith("tasks/"):
            return h.task_receiver.handle(method, params)
        if isinstance(params.get("task"), dict) and method in _TASKABLE:
            return h.task_receiver.create(method, params, lambda m, p: fulfil(h, m, p))
    if method == "roots/list":
        if h.roots_handler is not None:
            roots = h.roots_handler()
        elif h.roots is not None:
            roots = h.roots
        else:
            raise MethodNotFound("this client does not expose roots")
        return {"roots": [_dump(root) for root in roots]}
    if method == "sampling/createMessage":
        if h.sampling is None:
            raise MethodNotFound("this client does not support sampling")
        if "tools" in params or "toolChoice" in params:
            raise InvalidParams("this client did not declare sampling.tools")
        return _as_result(h.sampling(as_params(params)))
    if method == "elicitation/create":
        if h.elicitation is None:
            raise MethodNotFound("this client does not support elicitation")
        return _as_result(h.elicitation(as_params(params)))
    raise MethodNotFound(f"method not found: {method}")


# The wire models (pydantic) load only when a handler or callback needs them: a one-shot
# call that uses none never imports pydantic.
def as_params(params: dict[str, Any]) -> Params:
    from ..protocol.types import Params

    return Params.model_validate(params)


def _dump(value: Any) -> Any:
    from ..protocol.types import dump

    return dump(value)


def _as_result(value: Any) -> dict[str, Any]:
    result = _dump(value)
    if not isinstance(result, dict):
        raise InternalError(f"handler returned {type(value).__name__}, not a dict or model")
    return result
