"""``mcp-lite`` on configured servers: ``--trust-project [NAME]``, a hint in the CLI's own
words, and configuration problems (untrusted, blocked by policy) exiting 2, not 3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_lite import cli
from mcp_lite.errors import ServerDisabled
from mcp_lite.hub import Hub

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    demo = {"command": sys.executable, "args": [DEMO]}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"a": demo, "b": demo}}))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trust_project_name_trusts_only_that_server(capsys, project: Path) -> None:
    code, out, _ = run(
        capsys, "servers", "--project", str(project), "--trust-project", "a", "--json"
    )
    assert code == 0
    states = {s["name"]: s for s in json.loads(out)}
    assert states["a"]["state"] == "connected"
    assert states["b"]["state"] == "disabled"
    assert "--trust-project b" in states["b"]["error"]
    assert "trust_project=" not in states["b"]["error"]


def test_an_untrusted_server_is_a_configuration_error_exit_2(capsys, project: Path) -> None:
    code, _, err = run(
        capsys,
        "call",
        "mcp__b__add",
        '{"a": 1, "b": 2}',
        "--project",
        str(project),
        "--trust-project",
        "a",
    )
    assert code == 2
    assert "configuration error" in err and "--trust-project b" in err
    code, _, err = run(capsys, "tools", "--project", str(project))
    assert code == 2 and "--trust-project a" in err


def test_a_bare_trust_project_before_a_tool_name_keeps_the_tool_name(capsys, project: Path) -> None:
    code, out, err = run(
        capsys,
        "call",
        "--project",
        str(project),
        "--trust-project",
        "mcp__b__add",
        '{"a": 1, "b": 2}',
    )
    assert (code, out.strip()) == (0, "3"), err
    code, out, _ = run(capsys, "--trust-project", "tools", "--project", str(project))
    assert code == 0 and "mcp__a__add" in out and "mcp__b__add" in out


def test_trust_project_names_repeat(capsys, project: Path) -> None:
    code, out, _ = run(
        capsys,
        "servers",
        "--trust-project",
        "a",
        "--project",
        str(project),
        "--trust-project",
        "b",
        "--json",
    )
    assert code == 0
    assert {s["state"] for s in json.loads(out)} == {"connected"}


def test_a_server_blocked_by_policy_exits_2(
    capsys, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = tmp_path / "managed-settings.json"
    settings.write_text(json.dumps({"deniedMcpServers": [{"serverName": "a"}]}))
    from mcp_lite.hub.config import _discovery

    monkeypatch.setattr(_discovery, "default_managed_settings_paths", lambda: [settings])
    code, _, err = run(
        capsys,
        "call",
        "mcp__a__add",
        '{"a": 1, "b": 2}',
        "--project",
        str(project),
        "--trust-project",
    )
    assert code == 2 and "deniedMcpServers" in err
    code, out, _ = run(
        capsys,
        "call",
        "mcp__b__add",
        '{"a": 1, "b": 2}',
        "--project",
        str(project),
        "--trust-project",
    )
    assert (code, out.strip()) == (0, "3")


def test_the_python_hint_speaks_python(project: Path) -> None:
    with Hub.from_config(project) as hub:
        reason = hub.status()["a"].error or ""
        assert "trust_project=['a']" in reason and "--trust-project" not in reason
        with pytest.raises(ServerDisabled, match="trust_project=") as caught:
            hub.call_tool("mcp__a__add", {"a": 1, "b": 2})
    assert isinstance(caught.value, ValueError)  # a ConfigError, and a ConnectError
