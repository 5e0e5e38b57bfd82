"""The sans-IO rules of MCP Apps' ``_meta.ui`` (``protocol.apps``) and of extension settings
(``protocol.extensions``): what a tool's metadata says, read leniently but never loosened."""

from __future__ import annotations

import pytest

from mcp_lite import ToolUi
from mcp_lite.errors import ConfigError, LocalProtocolError
from mcp_lite.protocol.apps import tool_ui, visible_to
from mcp_lite.protocol.extensions import check_extensions, declared, merge, require
from mcp_lite.protocol.session import client_capabilities


@pytest.mark.parametrize(
    ("meta", "ui"),
    [
        (None, None),
        ({}, None),
        ({"ui": "ui://x"}, None),
        ({"ui": {}}, ToolUi(None, ("model", "app"))),
        ({"ui": {"resourceUri": "ui://a"}}, ToolUi("ui://a", ("model", "app"))),
        ({"ui": {"visibility": ["app"]}}, ToolUi(None, ("app",))),
        ({"ui": {"visibility": []}}, ToolUi(None, ())),
        # unreadable visibility: the default, never a guess that drops "model"
        ({"ui": {"visibility": "app"}}, ToolUi(None, ("model", "app"))),
        ({"ui": {"visibility": ["app", 3]}}, ToolUi(None, ("model", "app"))),
        ({"ui/resourceUri": "ui://old"}, ToolUi("ui://old", ("model", "app"))),
        (
            {"ui": {"visibility": ["app"]}, "ui/resourceUri": "ui://old"},
            ToolUi("ui://old", ("app",)),
        ),
        ({"ui": {"resourceUri": "ui://new"}, "ui/resourceUri": "ui://old"}, ToolUi("ui://new")),
    ],
)
def test_tool_ui(meta: object, ui: ToolUi | None) -> None:
    assert tool_ui(meta) == ui


def test_visible_to() -> None:
    assert visible_to(None, "model") and visible_to(None, "app")
    assert not visible_to({"ui": {"visibility": ["app"]}}, "model")
    assert visible_to({"ui": {"visibility": ["app"]}}, "app")
    assert not visible_to({"ui": {"visibility": ["model"]}}, "app")


def test_settings_are_copied_and_merged_by_whole_id() -> None:
    given = {"a/b": {"k": [1, {"x": None}]}}
    checked = check_extensions(given)
    assert checked == given and checked["a/b"] is not given["a/b"]
    assert merge({"a/b": {"k": 1}, "c/d": {}}, None, {"a/b": {"j": 2}}) == {
        "a/b": {"j": 2},
        "c/d": {},
    }
    with pytest.raises(ConfigError, match="not JSON"):
        check_extensions({"a/b": {"k": {1, 2}}})


def test_declared_in_both_eras_as_given() -> None:
    caps = client_capabilities(
        sampling=False, elicitation=False, roots=False, extensions={"a/b": {"k": 1}}
    )
    assert caps == {"extensions": {"a/b": {"k": 1}}}
    assert client_capabilities(sampling=False, elicitation=False, roots=False) == {}


def test_require_is_the_one_rule() -> None:
    require({"extensions": {"a/b": {}}}, "a/b", "srv")
    with pytest.raises(LocalProtocolError, match="'srv' does not declare the 'a/b' extension: why"):
        require({"extensions": {"c/d": {}}}, "a/b", "srv", ": why")
    assert declared({"extensions": None}) == {}
