"""The HTTP layer's cheap paths give what the general ones give: a request id's key (an
int's decimal text) is its JSON text for every id shape, the gateway's likewise; a single
message is an initialize exactly when it would be as a one-item batch; the era check of a
server's versions (memoized) is the plain one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_lite.gateway.session import _key
from mcp_lite.protocol import versions as pv
from mcp_lite.server._context import _id_key
from mcp_lite.server.http.endpoint import _any_stateless
from mcp_lite.server.http.handler import _has_initialize

IDS: list[Any] = [0, 1, -1, 7, 2**63, -(2**70), True, False, None, 1.0, 1.5, -0.0, "1", "",
                  'a"b\\c', "é", "\u2028", [1], {"a": 1}]  # fmt: skip


@pytest.mark.parametrize("rid", IDS, ids=repr)
def test_an_id_key_is_its_json_text(rid: Any) -> None:
    assert _id_key(rid) == json.dumps(rid)
    assert _key(rid) == json.dumps(rid)


def test_distinct_ids_keep_distinct_keys() -> None:
    keys = [_id_key(r) for r in (1, True, "1", 1.0)]
    assert len(set(keys)) == 4


MESSAGES: list[Any] = [
    {"method": "initialize"},
    {"method": "tools/call"},
    {"method": 1},
    {},
    {"id": 1, "method": "initialize", "params": {}},
    "initialize",
    None,
    1,
]


@pytest.mark.parametrize("msg", MESSAGES, ids=repr)
def test_a_single_message_is_an_initialize_as_in_a_batch(msg: Any) -> None:
    batch = _has_initialize([msg])
    assert _has_initialize(msg) == (batch if isinstance(msg, dict) else _has_initialize([msg]))


@pytest.mark.parametrize(
    "versions", [pv.SUPPORTED_VERSIONS, pv.HANDSHAKE_VERSIONS, (), ("2099-01-01",)]
)
def test_the_memoized_era_check_is_the_plain_one(versions: tuple[str, ...]) -> None:
    for _ in range(2):
        assert _any_stateless(versions) == any(pv.is_stateless(v) for v in versions)


def test_a_closed_http_server_is_not_kept_alive_by_the_response_caches() -> None:
    """The status lines are cached by what they are made of: a closed server (its handler
    class, app and Server) is collected after serving answers, not held by a cache."""
    import gc
    import weakref

    import requests

    from mcp_lite.server import Server

    server = Server("collected")

    @server.tool()
    def echo(text: str) -> str:
        return text

    http = server.serve_http(port=0)
    try:
        for _ in range(2):  # a 4xx and a 2xx: two status lines made and cached
            requests.post(http.url, data=b"{}", timeout=10)
            requests.post(
                http.url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers={"Accept": "application/json, text/event-stream"},
                timeout=10,
            )
    finally:
        http.close()
    gone = weakref.ref(server)
    del server, http, echo
    # A connection's handler thread may still be unwinding after close() on a busy machine:
    # wait (bounded) until it has let go; a cache holding the server never lets go.
    import time

    end = time.monotonic() + 10
    while gc.collect() is not None and gone() is not None and time.monotonic() < end:
        time.sleep(0.05)
    assert gone() is None
