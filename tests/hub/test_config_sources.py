"""Raw sources: Claude Desktop import, default locations, JSON reading, ``${VAR}`` rules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_lite import _server_config
from mcp_lite.errors import ConfigError
from mcp_lite.hub.config import _sources as src
from mcp_lite.hub.config import import_claude_desktop, parse_servers

if TYPE_CHECKING:
    from conftest import HubPaths  # tests/hub/conftest.py

# --- Claude Desktop -------------------------------------------------------------------------


def test_import_claude_desktop(hub_paths: HubPaths) -> None:
    path = hub_paths.write(
        hub_paths.home / "claude_desktop_config.json",
        {
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@mcp/fs", "/tmp"]},
                "remote": {"type": "http", "url": "https://x.example/mcp"},
            },
        },
    )
    data = import_claude_desktop(path)
    assert data == {
        "mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@mcp/fs", "/tmp"]},
            "remote": {"type": "http", "url": "https://x.example/mcp"},
        }
    }
    entries, issues = parse_servers(data, "user", str(path), environ={})
    assert issues == [] and all(e.usable for e in entries.values())


def test_import_claude_desktop_without_servers(hub_paths: HubPaths) -> None:
    path = hub_paths.write(hub_paths.home / "c.json", {"globalShortcut": ""})
    assert import_claude_desktop(str(path)) == {"mcpServers": {}}


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "not found"),
        ("{oops", "not valid JSON"),
        ('{"mcpServers": []}', "must be an object"),
    ],
)
def test_import_claude_desktop_errors(hub_paths: HubPaths, content: str | None, match: str) -> None:
    path = hub_paths.home / "claude_desktop_config.json"
    if content is not None:
        hub_paths.write(path, content)
    with pytest.raises(ConfigError, match=match):
        import_claude_desktop(path)


def test_claude_desktop_default_paths(tmp_path: Path) -> None:
    home = tmp_path
    name = "claude_desktop_config.json"
    assert src.claude_desktop_path("darwin", {}, home) == (
        home / "Library" / "Application Support" / "Claude" / name
    )
    assert src.claude_desktop_path("win32", {"APPDATA": str(tmp_path / "roaming")}, home) == (
        tmp_path / "roaming" / "Claude" / name
    )
    assert src.claude_desktop_path("linux", {}, home) == home / ".config" / "Claude" / name
    assert src.claude_desktop_path("linux", {"XDG_CONFIG_HOME": str(tmp_path / "x")}, home) == (
        tmp_path / "x" / "Claude" / name
    )


def test_managed_default_paths() -> None:
    assert src.default_managed_paths("linux") == [Path("/etc/claude-code/managed-mcp.json")]
    assert src.default_managed_paths("darwin") == [
        Path("/Library/Application Support/ClaudeCode/managed-mcp.json")
    ]
    assert [p.as_posix() for p in src.default_managed_paths("win32")] == [
        "C:/Program Files/ClaudeCode/managed-mcp.json",
        "C:/ProgramData/ClaudeCode/managed-mcp.json",
    ]


# --- reading --------------------------------------------------------------------------------


def test_read_json(hub_paths: HubPaths) -> None:
    assert src.read_json(hub_paths.home / "missing.json") == (None, None)
    good = hub_paths.write(hub_paths.home / "g.json", {"a": 1})
    assert src.read_json(good) == ({"a": 1}, None)
    bad = hub_paths.write(hub_paths.home / "b.json", '{"a": }')
    data, error = src.read_json(bad)
    assert data is None and error is not None and "line 1" in error
    bom = hub_paths.home / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"a": 2}')  # Windows editors write a BOM
    assert src.read_json(bom) == ({"a": 2}, None)


def test_project_section_matches_resolved_paths(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    data = {"projects": {str(real): {"mcpServers": {"a": {}}}}}
    assert src.project_section(data, link) == {"mcpServers": {"a": {}}}
    assert src.project_section(data, tmp_path / "other") is None
    assert src.project_section({"projects": []}, real) is None
    assert src.project_section(None, real) is None


# --- ${VAR} ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "missing"),
    [
        ("${A}", "1", []),
        ("x${A}y${A}", "x1y1", []),
        ("${NOPE}", "${NOPE}", ["NOPE"]),
        ("${NOPE:-d}", "d", []),
        ("${NOPE:-}", "", []),
        ("${EMPTY}", "", []),
        ("${EMPTY:-d}", "d", []),
        ("$A ${A", "$A ${A", []),
        ("${A:-d}", "1", []),
    ],
)
def test_expand_vars(text: str, expected: str, missing: list[str]) -> None:
    found: list[str] = []
    assert _server_config.expand_vars(text, {"A": "1", "EMPTY": ""}, found) == expected
    assert found == missing


@given(st.text().filter(lambda s: "${" not in s))
def test_text_without_references_is_unchanged(text: str) -> None:
    found: list[str] = []
    assert _server_config.expand_vars(text, {"A": "1"}, found) == text and found == []


@given(st.text(alphabet=st.characters(blacklist_characters="}:"), min_size=1))
def test_substituted_values_are_never_rescanned(value: str) -> None:
    found: list[str] = []
    environ = {"V": "${V}" + value, "W": "x"}
    assert _server_config.expand_vars("${V}", environ, found) == "${V}" + value and found == []
