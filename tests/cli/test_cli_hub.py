"""``mcp-lite`` on configured servers: servers, tools [SERVER], call, resources, read,
prompts, prompt, with --project / --config; the exit codes scripts rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_lite import cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch) -> Path:
    """No real ~/.claude.json, ~/.claude/ or ~/.cache is read or written."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": [DEMO]}}}))
    return root


def _config(tmp_path: Path, servers: dict[str, Any]) -> str:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_servers_lists_name_scope_type_state(capsys, project: Path, tmp_path: Path) -> None:
    extra = _config(tmp_path, {"broken": {"command": str(tmp_path / "missing")}})
    code, out, _ = run(capsys, "servers", "--project", str(project), "--trust-project",
                       "--config", extra)
    assert code == 0
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()}
    assert rows["demo"][1:4] == ["project", "stdio", "connected"]
    assert rows["broken"][1:4] == ["local", "stdio", "failed"]
    assert "missing" in rows["broken"][4]


def test_untrusted_project_servers_show_as_disabled(capsys, project: Path) -> None:
    code, out, _ = run(capsys, "servers", "--project", str(project), "--json")
    assert code == 0
    (demo,) = json.loads(out)
    assert (demo["name"], demo["state"]) == ("demo", "disabled")
    assert "trust" in demo["error"]


def test_tools_and_call_on_configured_servers(capsys, tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    code, out, _ = run(capsys, "tools", "--config", config)
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == [
        "mcp__demo__add", "mcp__demo__word_count", "mcp__demo__now", "mcp__demo__countdown"]
    code, out, _ = run(capsys, "tools", "demo", "--config", config, "--json")
    assert code == 0 and json.loads(out)[0]["input_schema"]["required"] == ["a", "b"]
    code, out, _ = run(capsys, "call", "mcp__demo__add", '{"a": 2, "b": 40}', "--config", config)
    assert (code, out.strip()) == (0, "42")


def test_project_dir_and_trust(capsys, project: Path) -> None:
    code, out, _ = run(capsys, "call", "mcp__demo__add", '{"a": 1, "b": 1}',
                       "--project", str(project), "--trust-project")
    assert (code, out.strip()) == (0, "2")


def test_resources_read_prompts_prompt(capsys, tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    code, out, _ = run(capsys, "resources", "--config", config)
    assert (code, out.split("\t")[:2]) == (0, ["demo", "demo://readme"])
    code, out, _ = run(capsys, "read", "demo://readme", "--config", config)
    assert code == 0 and out.startswith("# demo")
    code, out, _ = run(capsys, "read", "demo://notes/todo", "--server", "demo",
                       "--config", config)
    assert (code, out.strip()) == (0, "Write more demos.")
    code, out, _ = run(capsys, "prompts", "--config", config)
    assert code == 0 and out.startswith("mcp__demo__summarize\t")
    code, out, _ = run(capsys, "prompt", "mcp__demo__summarize", '{"text": "abc"}',
                       "--config", config)
    assert code == 0 and out.startswith("[user] Summarize") and "abc" in out


def test_exit_code_1_when_the_tool_reports_an_error(capsys, tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    code, out, _ = run(capsys, "call", "mcp__demo__now", '{"tz": "Mars/Olympus"}',
                       "--config", config)
    assert code == 1 and "unknown time zone" in out


@pytest.mark.parametrize("argv", [
    ["call", "mcp__demo__add", "{not json"],
    ["call", "mcp__demo__add", "[1, 2]"],
    ["call", "mcp__demo__nope"],
    ["call", "mcp__other__add"],
    ["tools", "nope"],
])
def test_exit_code_2_for_usage_errors(capsys, tmp_path: Path, argv: list[str]) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    code, _, err = run(capsys, *argv, "--config", config)
    assert code == 2 and err.startswith("mcp-lite: ")


def test_exit_code_2_when_nothing_is_configured(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "tools", "--project", str(tmp_path))
    assert code == 2 and "no MCP servers are configured" in err


def test_exit_code_3_when_no_server_can_be_reached(capsys, tmp_path: Path) -> None:
    config = _config(tmp_path, {"gone": {"command": str(tmp_path / "missing")}})
    code, _, err = run(capsys, "tools", "--config", config)
    assert code == 3 and "gone" in err
    code, _, err = run(capsys, "call", "mcp__gone__x", "--config", config)
    assert code == 3 and "connection failed" in err


def test_exit_code_124_on_timeout(capsys, tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    code, _, err = run(capsys, "call", "mcp__demo__countdown", '{"n": 30}', "--timeout", "0.5",
                       "--config", config)
    assert code == 124 and "timeout" in err




def test_exit_code_4_when_authorization_is_needed(capsys, tmp_path: Path, fault_server,
                                                  isolated_home: Path) -> None:
    config = _config(tmp_path, {"secure": {"type": "http", "url": fault_server.url("/auth")}})
    code, _, err = run(capsys, "tools", "--config", config)
    assert code == 4 and "authorization" in err
    code, _, err = run(capsys, "call", "mcp__secure__echo", "--config", config)
    assert code == 4
    assert (isolated_home / ".cache" / "mcp-lite" / "needs-auth.json").is_file()


def test_servers_with_stdio_is_a_usage_error_and_ad_hoc_mode_still_works(capsys) -> None:
    code, _, err = run(capsys, "servers", "--stdio", f"{sys.executable} {DEMO}")
    assert code == 2 and "servers" in err
    code, out, _ = run(capsys, "call", "--stdio", f"{sys.executable} {DEMO}", "add",
                       '{"a": 1, "b": 2}')
    assert (code, out.strip()) == (0, "3")


def test_the_console_script_on_a_config_file(tmp_path: Path, isolated_home: Path) -> None:
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [DEMO]}})
    proc = subprocess.run([sys.executable, "-m", "mcp_lite", "call", "mcp__demo__word_count",
                           '{"text": "one two"}', "--config", config, "--json"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"]["words"] == 2
