"""``Elicitation``: answers ``elicitation/create`` for every server of a Hub
(hooks first, then the host's handler; completion notifications for URL
mode)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...protocol.types import Params

__all__ = ["ElicitationHook", "Elicitation"]


ElicitationHook = Callable[[str, "Params"], Any]


class Elicitation:
    """Answers ``elicitation/create`` for every server of a Hub.

    ``hooks`` run first, in order: ``hook(server, params)`` returning a result (a dict like
    ``{"action": "accept", "content": {...}}``) answers; None passes to the next. Then
    ``handler(server, params)``; without one the answer is ``{"action": "cancel"}``.
    URL-mode completions (``notifications/elicitation/complete``) are remembered by id so a
    call waiting to retry after a URL elicitation can wait for them.
    """

    def __init__(
        self, hooks: Iterable[ElicitationHook] = (), handler: ElicitationHook | None = None
    ) -> None:
        self.hooks = tuple(hooks)
        self.handler = handler
        self._done: set[str] = set()
        self._cond = threading.Condition()

    @property
    def enabled(self) -> bool:
        return bool(self.hooks) or self.handler is not None

    def answer(self, server: str, params: Params) -> Any:
        for hook in self.hooks:
            result = hook(server, params)
            if result is not None:
                return result
        if self.handler is not None:
            return self.handler(server, params)
        return {"action": "cancel"}

    def completed(self, elicitation_id: str) -> None:
        with self._cond:
            self._done.add(elicitation_id)
            if len(self._done) > 1000:  # ids nobody waited for: keep the set bounded
                self._done.clear()
                self._done.add(elicitation_id)
            self._cond.notify_all()

    def wait_completed(self, elicitation_id: str, timeout: float) -> bool:
        with self._cond:
            done = self._cond.wait_for(lambda: elicitation_id in self._done, timeout)
            self._done.discard(elicitation_id)
            return done

    def _after_fork(self) -> None:
        self._cond = threading.Condition()
