"""``headersHelper`` in a remote config entry (issue 34, item 3), against the fault HTTP peer's
``/auth`` path, whose accepted token the tests rotate: the helper's headers at each connect, a
new run and one reconnect after a 401/403, a bounded run (the connect's deadline, 64 KiB of
output), the environment without the parent's credentials, trust before it runs, and its
output never in an error, repr, log line or status."""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import AuthRequired, ConnectError, Hub, RequestTimeout

HELPER = """\
import json, os, sys
here = sys.argv[1]
with open(os.path.join(here, "runs"), "a") as f:
    f.write("run\\n")
seen = {k: os.environ.get(k) for k in
        ("CLAUDE_CODE_MCP_SERVER_NAME", "CLAUDE_CODE_MCP_SERVER_URL", "HELPER_TEST_CREDENTIAL")}
with open(os.path.join(here, "env.json"), "w") as f:
    json.dump(seen, f)
with open(os.path.join(here, "token")) as f:
    token = f.read().strip()
print(json.dumps({"Authorization": "Bearer " + token, "X-Token-Copy": token}))
"""
TOKEN_1 = "tok-one-5ecret-value"
TOKEN_2 = "tok-two-5ecret-value"
PARENT_CREDENTIAL = "parent-cred-5ecret"


class Helper:
    """The helper script in ``folder``: its run count, the environment it saw, its token."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        script = folder / "helper.py"
        script.write_text(HELPER)
        self.command = (
            f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(folder))}"
        )
        self.token(TOKEN_1)

    def token(self, value: str) -> None:
        (self.folder / "token").write_text(value)

    @property
    def runs(self) -> int:
        path = self.folder / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0

    @property
    def env(self) -> dict[str, Any]:
        return json.loads((self.folder / "env.json").read_text())


@pytest.fixture
def helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Helper:
    monkeypatch.setenv("HELPER_TEST_CREDENTIAL", PARENT_CREDENTIAL)
    return Helper(tmp_path)


def _entry(fault_server: Any, command: str, **more: Any) -> dict[str, Any]:
    return {"type": "http", "url": fault_server.url("/auth"), "headersHelper": command, **more}


def _no_secret(*texts: object) -> None:
    for text in texts:
        for secret in (TOKEN_1, TOKEN_2, PARENT_CREDENTIAL):
            assert secret not in str(text), f"a helper secret leaked into {text!r}"


# --- the helper's headers, and a new run after a refusal -------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_rotated_token_is_fetched_again_and_the_call_succeeds(
    fault_server: Any, helper: Helper, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    caplog.set_level(logging.DEBUG)
    fault_server.state.token = TOKEN_1
    fault_server.state.auth_status = status
    with mcp_lite.connect(_entry(fault_server, helper.command, name="vault"), timeout=20) as client:
        assert helper.runs == 1
        assert client.call_tool("echo").text == "echo"
        # The token expires mid-run: the server now wants the next one, which the helper gives.
        fault_server.state.token = TOKEN_2
        helper.token(TOKEN_2)
        assert client.call_tool("echo").text == "echo"
        assert helper.runs == 2  # once at connect, once after the refusal
        assert fault_server.state.counts[str(status)] == 1
        _no_secret(repr(client))
    env = helper.env
    assert env["CLAUDE_CODE_MCP_SERVER_NAME"] == "vault"
    assert env["CLAUDE_CODE_MCP_SERVER_URL"] == fault_server.url("/auth")
    assert env["HELPER_TEST_CREDENTIAL"] is None  # the parent's credentials stay there
    assert "re-running its headersHelper" in caplog.text  # the log is seen, and clean
    _no_secret(caplog.text)


def test_a_token_refused_again_is_retried_once_only(
    fault_server: Any, helper: Helper, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fault_server.state.token = TOKEN_1
    with mcp_lite.connect(_entry(fault_server, helper.command), timeout=20) as client:
        fault_server.state.token = "a-token-the-helper-never-has"
        with pytest.raises(AuthRequired) as caught:
            client.call_tool("echo")
        # The refusal of the new connection's handshake is the error: no loop.
        assert helper.runs == 2
        _no_secret(caught.value, repr(caught.value))
    _no_secret(caplog.text)


def test_the_hub_re_runs_the_helper_after_a_refusal(
    fault_server: Any, helper: Helper, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    fault_server.state.token = TOKEN_1
    config = {"vault": _entry(fault_server, helper.command)}
    with Hub(config, auth_cache_path=tmp_path / "needs-auth.json") as hub:
        assert hub.call_tool("mcp__vault__echo").text == "echo"
        assert helper.runs == 1
        fault_server.state.token = TOKEN_2
        helper.token(TOKEN_2)
        assert hub.call_tool("mcp__vault__echo").text == "echo"
        assert helper.runs == 2
        assert hub.status()["vault"].state == "connected"
        # A tool list asked again (as after list_changed) is refused, then had anew.
        fault_server.state.token = TOKEN_1
        helper.token(TOKEN_1)
        hub._catalog.invalidate("vault")
        assert "mcp__vault__echo" in [t.name for t in hub.tools()]
        assert helper.runs == 3
        _no_secret(repr(hub.status()), repr(hub))
    assert helper.env["CLAUDE_CODE_MCP_SERVER_NAME"] == "vault"
    assert "re-running its headersHelper" in caplog.text
    _no_secret(caplog.text)


def test_static_headers_are_sent_with_the_helpers_on_top(fault_server: Any, helper: Helper) -> None:
    fault_server.state.token = TOKEN_1
    entry = _entry(
        fault_server, helper.command, headers={"X-Static": "kept", "X-Token-Copy": "replaced"}
    )
    with mcp_lite.connect(entry, timeout=20) as client:
        client.call_tool("echo")
    sent = fault_server.state.headers[-1]  # lower-cased by the peer
    assert sent["x-static"] == "kept"
    assert sent["x-token-copy"] == TOKEN_1


# --- a helper that fails ----------------------------------------------------------------------


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bad_helper.py"
    path.write_text(body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (f"print('not json: Bearer {TOKEN_1}')", "is not JSON"),
        (f"print('[\"{TOKEN_1}\"]')", "JSON list, not an object"),
        (f'print(\'{{"Authorization": 5, "{TOKEN_1}": 1}}\')', "value is a JSON int"),
        (f'print(\'{{"Bad Name {TOKEN_1}": "x"}}\')', "an invalid name"),
        (
            f'import sys\nprint(\'{{"Authorization": "Bearer {TOKEN_1}"}}\')\nsys.exit(3)',
            "exit code 3",
        ),
        (f"import sys\nsys.stdout.write('{TOKEN_1}' * 600_000)", "more than 64 KiB"),
    ],
    ids=["garbage", "not-an-object", "not-a-string", "bad-name", "exit-3", "10-MB"],
)
def test_a_failing_helper_is_a_clear_connect_error_without_its_output(
    fault_server: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    no_leftover_processes: Any,
    body: str,
    words: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    entry = _entry(fault_server, _script(tmp_path, body), name="vault")
    with pytest.raises(ConnectError) as caught:
        mcp_lite.connect(entry, timeout=20)
    message = str(caught.value)
    assert "MCP server 'vault': headersHelper" in message and words in message, message
    _no_secret(message, repr(caught.value), caplog.text)
    assert fault_server.state.counts["401"] == 0  # nothing was sent


def test_a_hanging_helper_ends_with_the_connect_deadline_and_leaves_no_process(
    fault_server: Any, tmp_path: Path, no_leftover_processes: Any, pid_gone: Any
) -> None:
    pids = tmp_path / "pids"
    # The helper and a child of its own, both asleep: the whole group goes at the deadline.
    command = f"sleep 60 & echo $! > {shlex.quote(str(pids))}; echo $$ >> {shlex.quote(str(pids))}; sleep 60"
    start = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        mcp_lite.connect(_entry(fault_server, command, name="vault"), timeout=1.5)
    elapsed = time.monotonic() - start
    assert "MCP server 'vault': headersHelper" in str(caught.value)
    assert elapsed < 1.5 + 2.0, elapsed  # the deadline plus the kill and reap
    for pid in map(int, pids.read_text().split()):
        assert pid_gone(pid), pid
    no_leftover_processes()


def test_a_hanging_helper_in_the_hub_is_bounded_by_the_call(
    fault_server: Any, tmp_path: Path, no_leftover_processes: Any
) -> None:
    config = {"vault": _entry(fault_server, "sleep 60")}
    with Hub(config, auth_cache_path=tmp_path / "needs-auth.json") as hub:
        start = time.monotonic()
        with pytest.raises(mcp_lite.McpError):
            hub.call_tool("mcp__vault__echo", timeout=1.5)
        assert time.monotonic() - start < 1.5 + 2.0
        assert "headersHelper" in (hub.status()["vault"].error or "")


# --- trust -----------------------------------------------------------------------------------


def test_an_untrusted_projects_helper_never_runs(
    fault_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    marker = tmp_path / "helper-ran"
    command = f"touch {shlex.quote(str(marker))}; echo '{{}}'"
    servers = {"mcpServers": {"vault": _entry(fault_server, command)}}
    (project / ".mcp.json").write_text(json.dumps(servers))
    with Hub.from_config(project_dir=project) as hub:
        states = hub.connect_all()
        assert states["vault"].state == "disabled"
        assert "not trusted" in (states["vault"].error or "")
        with pytest.raises(ConnectError):
            hub.call_tool("mcp__vault__echo")
    assert not marker.exists()
    with Hub.from_config(project_dir=project, trust_project=True) as hub:
        hub.connect_all()
    assert marker.exists()  # trusted, it runs (the server then wants a token it lacks)


# --- the config key ----------------------------------------------------------------------------


def test_the_key_is_read_for_remote_entries_only_and_its_command_is_not_shown() -> None:
    from mcp_lite._server_config import _validate

    config = _validate(
        {"type": "http", "url": "http://127.0.0.1:9/mcp", "headersHelper": f"echo {TOKEN_1}"},
        os.environ,
    )
    _no_secret(repr(config))
    with pytest.raises(mcp_lite.ConfigError, match="headersHelper"):
        mcp_lite.connect({"command": "true", "headersHelper": "echo {}"})
    with pytest.raises(mcp_lite.ConfigError, match="headersHelper"):
        mcp_lite.connect({"type": "http", "url": "http://127.0.0.1:9/mcp", "headersHelper": ""})


# --- the CLI ------------------------------------------------------------------------------------


def test_the_cli_calls_through_the_helper_and_never_prints_its_output(
    fault_server: Any,
    helper: Helper,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mcp_lite import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    fault_server.state.token = TOKEN_1
    bad = _script(tmp_path, f"print('garbage {TOKEN_2}')")
    servers = {"vault": _entry(fault_server, helper.command), "broken": _entry(fault_server, bad)}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    assert cli.main(["call", "mcp__vault__echo", "--config", str(config)]) == 0
    assert cli.main(["servers", "--config", str(config)]) == 0
    code = cli.main(["call", "mcp__broken__echo", "--config", str(config)])
    out, err = capsys.readouterr()
    assert code == 3 and "headersHelper" in err
    assert "echo" in out
    _no_secret(out, err)


def test_without_a_deadline_the_helper_runs_to_its_end() -> None:
    from mcp_lite._deadline import Deadline
    from mcp_lite.transports._headers_helper import run_headers_helper

    command = """printf '{"X-Server": "%s"}' "$CLAUDE_CODE_MCP_SERVER_NAME" """
    made = run_headers_helper(command, server="s", url="http://x", deadline=Deadline.after(None))
    assert made == {"X-Server": "s"}


def test_through_a_gateway_the_gateway_runs_the_helper_again(
    fault_server: Any, helper: Helper
) -> None:
    import shutil
    import tempfile

    from mcp_lite import Gateway

    fault_server.state.token = TOKEN_1
    folder = tempfile.mkdtemp(prefix="mcphh", dir="/tmp")  # a socket path must be short
    try:
        config = {"mcpServers": {"vault": _entry(fault_server, helper.command)}}
        with Gateway(Hub(config, gateway=False)).start(f"{folder}/gw.sock") as gw:
            url = f"unix://{gw.socket_path}/servers/vault/mcp"
            with mcp_lite.connect(url, timeout=20) as client:
                assert client.call_tool("echo").text == "echo"
                fault_server.state.token = TOKEN_2
                helper.token(TOKEN_2)
                assert client.call_tool("echo").text == "echo"
                assert helper.runs == 2
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_hub_reads_a_resource_again_after_a_refusal(
    fault_server: Any, helper: Helper, tmp_path: Path
) -> None:
    fault_server.state.token = TOKEN_1
    config = {"vault": _entry(fault_server, helper.command)}
    with Hub(config, auth_cache_path=tmp_path / "needs-auth.json") as hub:
        hub.connect_all()
        fault_server.state.token = TOKEN_2
        helper.token(TOKEN_2)
        # This peer has no resources: the method's own error, from the new connection, shows
        # that the refusal was not the end.
        with pytest.raises(mcp_lite.errors.MethodNotFound):
            hub.read_resource("file:///x", server="vault")
        assert helper.runs == 2


def test_a_refused_connect_is_tried_again_at_the_next_use(
    fault_server: Any, helper: Helper, tmp_path: Path
) -> None:
    # A 401 at connect is needs-auth, but not remembered for 15 minutes as for OAuth: the
    # helper may print good headers next time (the user logged in to the SSO meanwhile).
    fault_server.state.token = TOKEN_2
    auth_file = tmp_path / "needs-auth.json"
    config = {"vault": _entry(fault_server, helper.command)}
    with Hub(config, auth_cache_path=auth_file) as hub:
        assert hub.connect_all()["vault"].state == "needs-auth"
        helper.token(TOKEN_2)
        assert hub.call_tool("mcp__vault__echo").text == "echo"
        assert helper.runs == 2
    assert not auth_file.exists() or "vault" not in auth_file.read_text()
