"""What a connect target may be: a URL string with a scheme, a command list, a config dict
(checked by the Hub's validator, ``${VAR}`` expanded the Hub's way), or a Server. A string is
never run as a command, by ``connect`` or by ``mcp-lite --url``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite import cli
from mcp_lite.errors import ConfigError
from mcp_lite.hub.config import parse_servers

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")


@pytest.mark.parametrize(
    "target",
    ["host:8000/mcp", "localhost:8000", f"{sys.executable} {DEMO}", "srv.py", "ftp://x/mcp"],
)
def test_a_string_that_is_not_a_url_is_a_config_error_and_runs_nothing(
    target: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    # Were the string run as a command, this one would leave a file behind.
    evil = f"{target} ; touch {marker}"
    for candidate in (target, evil):
        with pytest.raises(ConfigError) as info:
            mcp_lite.connect(candidate, timeout=5)
        assert "URL" in str(info.value)
    assert not marker.exists()


def test_a_command_is_a_list_or_a_dict() -> None:
    with mcp_lite.connect([sys.executable, DEMO], timeout=20) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
    with mcp_lite.connect({"command": sys.executable, "args": [DEMO]}, timeout=20) as client:
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"


def test_connect_dict_expands_variables_like_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_LITE_TEST_PY", sys.executable)
    monkeypatch.delenv("MCP_LITE_TEST_UNSET", raising=False)
    raw = {
        "command": "${MCP_LITE_TEST_PY}",
        "args": ["${MCP_LITE_TEST_UNSET:-" + DEMO + "}"],
    }
    with mcp_lite.connect(raw, timeout=20) as client:
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
    # The Hub reads the same entry the same way.
    entries, issues = parse_servers({"s": raw}, "user", "test")
    assert issues == []
    assert entries["s"].target() == {
        "command": sys.executable,
        "args": [DEMO],
        "env": {},
        "cwd": None,
    }


def test_connect_dict_missing_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_LITE_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError, match="MCP_LITE_TEST_UNSET"):
        mcp_lite.connect({"command": "${MCP_LITE_TEST_UNSET}"}, timeout=5)


def test_a_value_is_expanded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A variable whose value looks like ${...} is not expanded again (by connect or the Hub).
    monkeypatch.setenv("MCP_LITE_TEST_A", "${MCP_LITE_TEST_B}")
    monkeypatch.setenv("MCP_LITE_TEST_B", "leaked")
    entries, _ = parse_servers(
        {"s": {"command": "x", "args": ["${MCP_LITE_TEST_A}"]}}, "user", "test"
    )
    target = entries["s"].target()
    assert target["args"] == ["${MCP_LITE_TEST_B}"]  # type: ignore[index]
    client = mcp_lite.Client(target)  # the Hub's target is taken as is: no second pass
    assert client.target["args"] == ["${MCP_LITE_TEST_B}"]
    client.close()


@pytest.mark.parametrize(
    ("raw", "key", "hint"),
    [
        ({"command": "x", "arg": ["a"]}, "arg", "args"),
        ({"command": "x", "Env": {}}, "Env", "env"),
        ({"type": "http", "url": "https://x.example/mcp", "header": {}}, "header", "headers"),
        ({"url": "https://x.example/mcp", "readtimeout": 5}, "readtimeout", "readTimeout"),
        ({"url": "wss://x.example/ws", "banana": 1}, "banana", None),
    ],
)
def test_unknown_keys_are_named_with_a_suggestion(raw: dict, key: str, hint: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        mcp_lite.connect(raw, timeout=5)
    message = str(info.value)
    assert repr(key) in message
    if hint is not None:
        assert f"did you mean {hint!r}" in message
    else:
        assert "did you mean" not in message


def test_header_with_a_line_break_is_refused_naming_the_header() -> None:
    canary = "s3cr3t-canary-value"
    for raw in (
        {"url": "https://x.example/mcp", "headers": {"X-Api-Key": f"{canary}\r\nX-Evil: 1"}},
        {"url": "https://x.example/mcp", "headers": {"X-Api-Key": f"{canary}\n"}},
    ):
        with pytest.raises(ConfigError) as info:
            mcp_lite.connect(raw, timeout=5)
        assert "X-Api-Key" in str(info.value) and canary not in str(info.value)
    with pytest.raises(ConfigError) as info:
        mcp_lite.connect(
            "https://x.example/mcp", headers={"Authorization": f"Bearer {canary}\r\n"}, timeout=5
        )
    assert "Authorization" in str(info.value) and canary not in str(info.value)
    entries, issues = parse_servers(
        {"s": {"url": "https://x.example/mcp", "headers": {"X-Api-Key": f"{canary}\r\n"}}},
        "user",
        "test",
    )
    assert entries["s"].config is None and "X-Api-Key" in str(issues[0])
    assert canary not in str(issues[0]) and canary not in (entries["s"].error or "")


def test_cli_url_is_never_run_as_a_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    code = cli.main(["tools", "--url", f"touch {marker}"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE and "--url" in err
    assert not marker.exists()


def test_cli_stdio_takes_a_command_string(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["call", "--stdio", f"{sys.executable} {DEMO}", "add", '{"a": 2, "b": 3}'])
    assert code == 0 and capsys.readouterr().out.strip() == "5"


def test_a_config_dicts_own_name_and_timeout_apply() -> None:
    client = mcp_lite.Client(
        {"command": sys.executable, "args": [DEMO], "name": "demo", "timeout": 7}
    )
    try:
        assert client.name == "demo" and client.timeout == 7.0
    finally:
        client.close()
    client = mcp_lite.Client({"command": "x", "timeout": 7}, timeout=3)
    assert client.timeout == 3.0  # the argument wins
    client.close()
    with pytest.raises(ConfigError, match="disabled"):
        mcp_lite.connect({"command": "x", "disabled": True}, timeout=5)
