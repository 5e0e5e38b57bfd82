"""Extensions negotiated with settings (SEP-2133), in both eras, against mcp_lite's own Server:
``connect(extensions=)`` (and a config dict's ``"extensions"``) declared as given beside
mcp_lite's own, ``client.server_extensions``, and the one rule (a feature whose extension the
server did not declare is not used). The official SDK's server: tests/interop."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_lite
from mcp_lite import Context, Server
from mcp_lite.errors import ConfigError, LocalProtocolError

ERAS = ["2025-11-25", "auto"]  # the handshake era, and 2026-07-28 (per-request _meta)
UI = "io.modelcontextprotocol/ui"
TASKS = "io.modelcontextprotocol/tasks"
SKILLS = "io.modelcontextprotocol/skills"
# Settings a client passes through unchanged: nested, unknown keys, every JSON type.
SETTINGS = {
    UI: {"mimeTypes": ["text/html;profile=mcp-app"]},
    "com.example/x": {"nested": {"list": [1, "two", None, True, 2.5]}, "x-unknown": {}},
}
SERVER_SETTINGS = {"com.example/server": {"level": 3, "modes": ["a", "b"], "deep": {"k": None}}}


def make_server(**kwargs: Any) -> Server:
    server = Server("ext", **kwargs)

    @server.tool()
    def seen(ctx: Context) -> str:
        """The client's declared extensions, as the server saw them on this request."""
        return json.dumps(ctx.client_capabilities.get("extensions"), sort_keys=True)

    return server


def seen_by(client: Any) -> dict[str, Any]:
    return json.loads(client.call_tool("seen").text)


@pytest.mark.parametrize("era", ERAS)
def test_settings_round_trip_both_ways(era: str) -> None:
    server = make_server(extensions=SERVER_SETTINGS)
    with mcp_lite.connect(server, protocol_version=era, extensions=SETTINGS) as client:
        assert client.session.era == ("handshake" if era != "auto" else "stateless")
        # ours, with their settings as before, and the user's exactly as given
        assert seen_by(client) == {TASKS: {}, SKILLS: {}, **SETTINGS}
        assert client.server_extensions == SERVER_SETTINGS


@pytest.mark.parametrize("era", ERAS)
def test_no_extensions_given_declares_only_ours_and_none_found_is_empty(era: str) -> None:
    with mcp_lite.connect(make_server(), protocol_version=era) as client:
        assert seen_by(client) == {TASKS: {}, SKILLS: {}}
        assert client.server_extensions == {}


def test_a_config_dict_entry_is_laid_over_the_option() -> None:
    server = make_server()
    with mcp_lite.connect(
        {"type": "sdk", "server": server, "extensions": {"com.example/x": {"from": "entry"}}},
        extensions={"com.example/x": {"from": "option"}, "com.example/y": {}},
    ) as client:
        assert seen_by(client) == {
            TASKS: {},
            SKILLS: {},
            "com.example/x": {"from": "entry"},
            "com.example/y": {},
        }


def test_the_caller_editing_its_dict_later_changes_nothing() -> None:
    given = {"com.example/x": {"n": 1}}
    with mcp_lite.connect(make_server(), extensions=given) as client:
        given["com.example/x"]["n"] = 2
        assert seen_by(client)["com.example/x"] == {"n": 1}


def test_a_server_declaration_that_is_not_an_object_still_declares_the_id() -> None:
    from mcp_lite.protocol.extensions import declared

    caps = {"extensions": {"a/b": True, "c/d": {"k": 1}, "": {}, 3: {}}}
    assert declared(caps) == {"a/b": {}, "c/d": {"k": 1}}
    assert declared({"extensions": ["a/b"]}) == {}
    assert declared({}) == {}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (["io.modelcontextprotocol/ui"], "mapping"),
        ({"": {}}, "non-empty string"),
        ({1: {}}, "non-empty string"),
        ({UI: ["text/html"]}, "JSON object"),
        ({UI: None}, "JSON object"),
        ({UI: {"x": object()}}, "not JSON"),
        ({UI: {"x": float("nan")}}, "not JSON"),
    ],
)
def test_bad_input_is_a_config_error_before_anything_starts(bad: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        mcp_lite.connect(make_server(), extensions=bad)
    with pytest.raises(ConfigError, match=says):
        Server("s", extensions=bad)


def test_a_config_dict_with_bad_extensions_is_refused() -> None:
    with pytest.raises(ConfigError, match="extensions"):
        mcp_lite.connect({"command": "true", "extensions": {UI: "yes"}})


@pytest.mark.parametrize("era", ERAS)
def test_a_feature_needs_the_extension_declared(era: str) -> None:
    """Skills are not asked for when the server does not declare them (the one rule)."""
    with (
        mcp_lite.connect(make_server(), protocol_version=era) as client,
        pytest.raises(LocalProtocolError, match=SKILLS),
    ):
        client.list_skills()


def test_an_entry_target_keeps_its_extensions(tmp_path: Any) -> None:
    from mcp_lite.hub.config import parse_servers

    entries, issues = parse_servers(
        {"mcpServers": {"s": {"command": "python", "extensions": {"com.example/x": {"k": 1}}}}},
        "project",
        str(tmp_path / ".mcp.json"),
    )
    assert not issues
    assert entries["s"].target()["extensions"] == {"com.example/x": {"k": 1}}
