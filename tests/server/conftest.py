"""Fixtures for the ``Server`` tests; the harness itself is in ``server_harness``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from server_harness import Peer

from mcp_lite.server import Server


@pytest.fixture
def peers() -> Iterator[Any]:
    """``peers(server)`` opens a connection; all are closed at teardown."""
    opened: list[Peer] = []

    def open_peer(server: Server) -> Peer:
        peer = Peer(server)
        opened.append(peer)
        return peer

    yield open_peer
    for peer in opened:
        peer.conn.close(timeout=0.5)
