"""Session rules for both eras: negotiation, the discover probe, MRTR, pagination."""

from __future__ import annotations

import pytest

from mcp_lite.errors import (
    LocalProtocolError,
    MethodNotFound,
    RemoteProtocolError,
    UnsupportedProtocolVersion,
    UnsupportedVersionError,
)
from mcp_lite.protocol import session as s
from mcp_lite.protocol import versions as v
from mcp_lite.protocol.jsonrpc import ErrorResponse, Response


def test_initialize_asks_for_what_we_declare():
    caps = s.client_capabilities(sampling=True, elicitation=True, roots=False)
    params = s.initialize_params(v.V2025_11_25, caps, {"name": "t", "version": "1"})
    assert params["protocolVersion"] == "2025-11-25"
    assert params["capabilities"] == {"sampling": {}, "elicitation": {"form": {}, "url": {}}}
    old = s.initialize_params(v.V2025_06_18, caps, {"name": "t", "version": "1"})
    assert old["capabilities"]["elicitation"] == {}
    assert s.client_capabilities(sampling=False, elicitation=False, roots=False) == {}


@pytest.mark.parametrize("offered", list(v.HANDSHAKE_VERSIONS))
def test_an_older_supported_answer_is_accepted(offered):
    info = s.accept_initialize(
        {
            "protocolVersion": offered,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "x", "version": "2"},
            "instructions": "hi",
        },
        pinned=None,
    )
    assert info.protocol_version == offered and info.era == "handshake"
    assert info.has_capability("tools") and not info.has_capability("prompts")
    assert info.instructions == "hi" and info.server_info["name"] == "x"


def test_an_unsupported_answer_is_refused_clearly():
    with pytest.raises(UnsupportedProtocolVersion) as err:
        s.accept_initialize({"protocolVersion": "1999-01-01"}, pinned=None)
    assert "1999-01-01" in str(err.value) and "2025-11-25" in str(err.value)
    with pytest.raises(UnsupportedProtocolVersion):
        s.accept_initialize({"protocolVersion": "2025-03-26"}, pinned="2025-06-18")
    with pytest.raises(RemoteProtocolError):
        s.accept_initialize({}, pinned=None)


def test_stateless_meta_is_added_without_touching_the_callers_params():
    params = {"name": "x", "_meta": {"progressToken": 3}}
    out = s.add_stateless_meta(
        params,
        version=v.V2026_07_28,
        capabilities={"sampling": {}},
        client_info={"name": "c"},
        log_level="info",
    )
    assert params == {"name": "x", "_meta": {"progressToken": 3}}
    meta = out["_meta"]
    assert meta["progressToken"] == 3
    assert meta[v.META_PROTOCOL_VERSION] == "2026-07-28"
    assert meta[v.META_CLIENT_CAPABILITIES] == {"sampling": {}}
    assert meta[v.META_CLIENT_INFO] == {"name": "c"}
    assert meta[v.META_LOG_LEVEL] == "info"


def test_discover_result_means_stateless():
    result = {
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "_meta": {v.META_SERVER_INFO: {"name": "srv", "version": "9"}},
    }
    outcome = s.discover_outcome(Response(1, result), v.V2026_07_28)
    assert outcome.kind == "stateless" and outcome.session is not None
    assert outcome.session.server_info["name"] == "srv"
    assert outcome.session.protocol_version == "2026-07-28"


def test_any_other_error_or_a_timeout_means_handshake():
    assert s.discover_outcome(None, v.V2026_07_28).kind == "handshake"
    assert (
        s.discover_outcome(ErrorResponse(1, MethodNotFound("x")), v.V2026_07_28).kind == "handshake"
    )
    assert s.discover_outcome(Response(1, {"unrelated": True}), v.V2026_07_28).kind == "handshake"


def test_a_modern_version_error_is_not_a_fallback():
    err = UnsupportedVersionError("no", data={"supported": ["2027-01-01"], "requested": "x"})
    with pytest.raises(UnsupportedProtocolVersion):
        s.discover_outcome(ErrorResponse(1, err), v.V2026_07_28)
    legacy_only = UnsupportedVersionError("no", data={"supported": ["2025-11-25"]})
    assert s.discover_outcome(ErrorResponse(1, legacy_only), v.V2026_07_28).kind == "handshake"


def test_input_required_detection():
    assert not s.is_input_required({})
    assert not s.is_input_required({"resultType": "complete"})
    assert s.is_input_required({"resultType": "input_required"})
    with pytest.raises(RemoteProtocolError):
        s.is_input_required({"resultType": "maybe"})


def test_retry_params_echo_request_state_exactly_and_drop_old_rounds():
    original = {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {"old": 1},
        "requestState": "old",
    }
    result = {
        "resultType": "input_required",
        "requestState": "opaque==",
        "inputRequests": {"k": {"method": "roots/list"}},
    }
    out = s.retry_params(original, result, {"k": {"roots": []}})
    assert out == {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {"k": {"roots": []}},
        "requestState": "opaque==",
    }
    assert "requestState" not in s.retry_params({"name": "t"}, {"resultType": "input_required"}, {})
    with pytest.raises(RemoteProtocolError):
        s.input_requests({"inputRequests": {"k": {"params": {}}}})


def test_pager_walks_cursors_and_refuses_loops():
    pager = s.Pager("tools/list")
    assert pager.params() == {}
    pager.advance({"nextCursor": ""})  # an empty cursor is a valid cursor (2026-07-28)
    assert not pager.done and pager.params() == {"cursor": ""}
    pager.advance({"nextCursor": "b"})
    with pytest.raises(RemoteProtocolError, match="repeated"):
        pager.advance({"nextCursor": "b"})
    capped = s.Pager("tools/list", max_pages=2)
    capped.advance({"nextCursor": "1"})
    with pytest.raises(RemoteProtocolError, match="more than 2 pages"):
        capped.advance({"nextCursor": "2"})
    last = s.Pager("x")
    last.advance({})
    assert last.done


def test_methods_removed_in_2026_are_refused_locally():
    info = s.SessionInfo(protocol_version=v.V2026_07_28, era="stateless")
    with pytest.raises(LocalProtocolError, match="ping"):
        s.check_method_allowed("ping", info)
    s.check_method_allowed("tools/list", info)
    s.check_method_allowed("ping", s.SessionInfo(protocol_version=v.V2025_11_25, era="handshake"))


@pytest.mark.parametrize("schema, problem", [
    ({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}, None),
    ({"type": "object", "properties": {"o": {"type": "object", "properties": {
        "n": {"type": "integer", "x-mcp-header": "N"}}}}}, None),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "token"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}, "token"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                       "b": {"type": "string", "x-mcp-header": "x"}}}, "twice"),
    ({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "number"),
    ({"type": "object", "properties": {"a": {"type": "array", "x-mcp-header": "A"}}}, "array"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {
        "type": "string", "x-mcp-header": "A"}}}}, "outside"),
    ({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
     "outside"),
    ({"type": "object", "x-mcp-header": "Root"}, "outside"),
])
def test_x_mcp_header_rules(schema, problem):
    found = s.mcp_header_problem(schema)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_result_cache_follows_ttl_keys_and_notifications():
    from mcp_lite.protocol.caching import ResultCache, cache_key

    cache = ResultCache()
    page1 = cache_key("tools/list", {"_meta": {"x": 1}})
    page2 = cache_key("tools/list", {"cursor": "2"})
    assert page1 == cache_key("tools/list", {}) and page1 != page2  # _meta never shapes a key
    assert cache_key("tools/call", {}) is None
    assert cache_key("resources/read", {"uri": "a", "requestState": "s"}) is None
    cache.put(page1, {"tools": [], "ttlMs": 1000}, now=10.0)
    cache.put(page2, {"tools": [], "ttlMs": 0}, now=10.0)  # 0: stale at once
    cache.put("x", {"resultType": "input_required", "ttlMs": 1000}, now=10.0)
    assert cache.get(page1, now=10.5) == {"tools": [], "ttlMs": 1000}
    assert cache.get(page1, now=11.0) is None and len(cache) == 0  # expired and dropped
    assert cache.get(page2, now=10.0) is None and cache.get("x", now=10.0) is None
    read_a, read_b = cache_key("resources/read", {"uri": "a"}), cache_key("resources/read", {"uri": "b"})
    for key in (page1, read_a, read_b):
        cache.put(key, {"ttlMs": 60000}, now=0.0)
    cache.invalidate("notifications/resources/updated", {"uri": "a"})
    assert cache.get(read_a, 1.0) is None and cache.get(read_b, 1.0) is not None
    cache.invalidate("notifications/tools/list_changed", {})
    assert cache.get(page1, 1.0) is None and cache.get(read_b, 1.0) is not None
