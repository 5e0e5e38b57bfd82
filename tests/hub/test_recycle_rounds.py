"""A Hub never recycles a server under a call that waits between two 2026-07-28
``input_required`` rounds (its user is being asked): the call holds the server until it
ends, even on a ``Client`` kept from ``hub.client()`` (which holds no lease)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcp_lite.hub import Hub

ASKING = str(Path(__file__).resolve().parents[1] / "peers" / "asking_server.py")


def test_a_kept_client_s_call_waiting_for_its_user_holds_the_server(
    no_leftover_processes,
) -> None:
    asked, answer = threading.Event(), threading.Event()

    def elicit(server: str, params: Any) -> dict[str, Any]:
        asked.set()
        answer.wait(20)
        return {"action": "accept", "content": {"answer": "yes"}}

    config = {"ask": {"command": sys.executable, "args": [ASKING, "2026-07-28"]}}
    with Hub(config, idle_timeout=0.2, elicitation_handler=elicit) as hub:
        kept = hub.client("ask")
        assert kept.session.era == "stateless"
        results: list[Any] = []

        def call() -> None:
            try:
                results.append(kept.call_tool("ask", {"question": "ok?"}, timeout=30).text)
            except Exception as exc:  # (the assertion below shows it)
                results.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert asked.wait(20)
        time.sleep(0.8)  # four idle timeouts while the user is asked: still a use
        status = hub.status()["ask"]
        assert (status.state, status.recycles) == ("connected", 0) and not kept.closed
        answer.set()
        caller.join(30)
        assert results == ["accept: yes"], "the Hub recycled the server between input rounds"
    no_leftover_processes()
