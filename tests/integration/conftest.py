"""Commands for the stdio peers the integration tests start (the client spawns them itself)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def official_stdio(official_server_cmd: Callable[..., list[str]]) -> list[str]:
    """argv of the official-SDK peer over stdio."""
    return official_server_cmd("stdio")


@pytest.fixture(scope="session")
def everything_stdio(everything_cmd: Callable[[str], list[str]]) -> list[str]:
    """argv of server-everything over stdio."""
    return everything_cmd("stdio")


@pytest.fixture(scope="session")
def fault_cmd(peer_python: str, peers_dir: Path) -> Callable[..., list[str]]:
    """``fault_cmd(mode, record=None)`` -> argv of ``fault_server.py`` in that mode."""

    def build(mode: str, record: Path | None = None) -> list[str]:
        cmd = [peer_python, str(peers_dir / "fault_server.py"), mode]
        if record is not None:
            cmd += ["--record", str(record)]
        return cmd

    return build


@pytest.fixture(autouse=True)
def _collect_garbage_after_each_test() -> Iterator[None]:
    """Collect garbage at teardown, so that a ResourceWarning (an unclosed pipe or socket,
    an error under ``filterwarnings = error``) is blamed on the test that leaked it."""
    yield
    gc.collect()
