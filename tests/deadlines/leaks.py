"""Which threads a cell of the deadline matrix must leave behind: none of its own."""

from __future__ import annotations

import threading

# Process-wide threads that leave after an idle second or two by design. A cell does not wait
# for them (that wait was most of a short cell's time); the end of each module does, and an
# entry a cell leaked would keep them alive.
IDLE_EXITING = frozenset({"mcp-lite-timer", "mcp-lite-socket-watchdog"})


def cell_threads(threads: set[threading.Thread] | None = None) -> list[str]:
    """Live threads not in ``threads`` (default: every ``mcp-lite`` one), less ``IDLE_EXITING``."""
    return [
        t.name
        for t in threading.enumerate()
        if t.is_alive()
        and t.name not in IDLE_EXITING
        and (t not in threads if threads is not None else t.name.startswith("mcp-lite"))
    ]
