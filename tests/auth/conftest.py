from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from authserver import AuthServer, Behaviour


@pytest.fixture
def auth_server() -> Iterator[Callable[..., AuthServer]]:
    """``auth_server(**behaviour)`` starts a fresh server on 127.0.0.1; all stop at teardown."""
    started: list[AuthServer] = []

    def start(**behaviour: object) -> AuthServer:
        server = AuthServer(Behaviour(**behaviour)).start()  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
