"""The deadline of a Hub operation in progress, for the steps it runs: a caller's
``timeout`` made into its one ``Deadline`` (``_deadline``), and a context in
which the Hub's own tools run under it (``_within``, ``_current``)."""

from __future__ import annotations

import contextvars

from .._deadline import Deadline
from ..errors import ConfigError

__all__: list[str] = []  # (private to the Hub)


# The deadline of the public Hub operation running on this thread, for the steps it
# reaches through code that does not carry it (tool_definitions, the Hub's own tools).
_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "mcp_lite_hub_deadline", default=None
)


def _deadline(timeout: float | None) -> Deadline | None:
    """A caller's ``timeout`` as its one deadline; None: the configured totals apply."""
    if timeout is None:
        return None
    if timeout <= 0:
        raise ConfigError("timeout must be a positive number of seconds")
    return Deadline.after(timeout)


def _current(deadline: Deadline | None) -> Deadline | None:
    return deadline if deadline is not None else _CURRENT.get()


class _within:
    """``with _within(deadline):`` steps below use ``deadline`` when given none."""

    def __init__(self, deadline: Deadline | None) -> None:
        self._deadline = _current(deadline)

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._deadline)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)
