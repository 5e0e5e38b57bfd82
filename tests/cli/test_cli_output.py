"""What ``mcp-lite`` prints for what servers really send: images, audio and blobs summarised
or written to ``--output`` (never a blank line), empty results, servers without resource
templates, unknown tools and servers with a "did you mean", tool counts in ``servers``, and
connection failures said in words with the right exit code."""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite import cli
from mcp_lite._text import human_size, plural

ROOT = Path(__file__).resolve().parents[2]
PLAIN = f"{sys.executable} {ROOT / 'tests' / 'peers' / 'plain_server.py'}"
DEMO = f"{sys.executable} {ROOT / 'examples' / 'demo_server.py'}"
sys.path.insert(0, str(ROOT / "tests" / "peers"))
import plain_server  # noqa: E402

PNG = plain_server.PNG


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", str(home / "oauth"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_wording_helpers() -> None:
    assert [plural(n, "tool") for n in (0, 1, 2)] == ["0 tools", "1 tool", "2 tools"]
    assert human_size(1) == "1 byte"
    assert human_size(512) == "512 bytes"
    assert human_size(12_345) == "12 KB"
    assert human_size(3_500_000) == "3.3 MB"


def test_image_is_summarised_not_a_blank_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "call", "--stdio", PLAIN, "logo")
    assert code == 0, err
    assert out.splitlines() == [f"[image/png, {human_size(len(PNG))}]", "the logo"]


def test_output_writes_the_image(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "logo.png"
    code, out, err = run(capsys, "call", "--stdio", PLAIN, "logo", "--output", str(target))
    assert code == 0, err
    assert target.read_bytes() == PNG
    assert f"written to {target}" in out


def test_output_with_json_writes_the_file_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "data.bin"
    code, out, _ = run(capsys, "--json", "--output", str(target), "call", "--stdio", PLAIN, "file")
    assert code == 0
    assert json.loads(out)["content"][0]["resource"]["uri"] == "plain://data.bin"
    assert target.read_bytes() == PNG


def test_audio_and_blob_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "call", "--stdio", PLAIN, "sound")
    assert code == 0
    size = len(base64.b64decode(plain_server.B64[:1368]))
    assert out.strip() == f"[audio/wav, {human_size(size)}]"
    code, out, _ = run(capsys, "call", "--stdio", PLAIN, "file")
    assert out.strip() == f"[application/octet-stream, {human_size(len(PNG))}]"


def test_read_blob_resource(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "read", "--stdio", PLAIN, "plain://logo.png")
    assert code == 0
    assert out.strip() == f"[image/png, {human_size(len(PNG))}]"
    target = tmp_path / "r.png"
    code, _, _ = run(capsys, "read", "--stdio", PLAIN, "plain://logo.png", "--output", str(target))
    assert code == 0 and target.read_bytes() == PNG


def test_empty_result_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "call", "--stdio", PLAIN, "empty")
    assert code == 0
    assert out == ""


def test_resources_without_templates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "resources", "--stdio", PLAIN)
    assert code == 0, err
    assert out.strip() == "plain://logo.png\tlogo"
    code, out, _ = run(capsys, "resources", "--stdio", PLAIN, "--json")
    assert json.loads(out)["resourceTemplates"] == []


def test_unknown_tool_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "call", "--stdio", DEMO, "ad", "{}")
    assert code == 2
    assert "no tool 'ad'; did you mean 'add'?" in err
    code, _, err = run(capsys, "call", "--stdio", PLAIN, "zzz")
    assert code == 2
    assert "(tools: logo, sound, file, empty, add, stats)" in err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    servers = {
        "plain": {"command": sys.executable, "args": [str(ROOT / "tests/peers/plain_server.py")]},
        "demo": {"command": sys.executable, "args": [str(ROOT / "examples/demo_server.py")]},
    }
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


def test_servers_report_tool_counts(capsys: pytest.CaptureFixture[str], project: Path) -> None:
    argv = ["servers", "--project", str(project), "--trust-project"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert {row["name"]: row["tools"] for row in json.loads(out)} == {"plain": 6, "demo": 4}
    code, out, _ = run(capsys, *argv)
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()}
    assert rows["plain"][3:] == ["connected", "6 tools"]


def test_hub_did_you_mean(capsys: pytest.CaptureFixture[str], project: Path) -> None:
    opts = ["--project", str(project), "--trust-project"]
    code, _, err = run(capsys, "call", "mcp__demo__ad", "{}", *opts)
    assert code == 2 and "did you mean 'mcp__demo__add'?" in err
    code, _, err = run(capsys, "tools", "dmo", *opts)
    assert code == 2 and "did you mean 'demo'?" in err
    code, _, err = run(capsys, "blah", *opts)
    assert code == 2


def test_hub_output_moves_the_saved_image(
    capsys: pytest.CaptureFixture[str], project: Path, tmp_path: Path
) -> None:
    target = tmp_path / "hub-logo.png"
    code, out, err = run(
        capsys, "call", "mcp__plain__logo", "--project", str(project), "--trust-project",
        "--output", str(target),
    )
    assert code == 0, err
    assert target.exists() and target.stat().st_size > 0
    assert str(target) in out


# --- connection failures, in words ---------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refused_says_refused(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    code, _, err = run(capsys, "tools", "--url", url, "--timeout", "10")
    assert code == 3
    assert "connection refused" in err
    assert "Max retries" not in err and "ConnectionError" not in err


def test_no_such_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "tools", "--url", "https://no-such-host.invalid/mcp")
    assert code == 3
    assert "no such host 'no-such-host.invalid'" in err
    assert "Max retries" not in err


@pytest.fixture
def silent_listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """Accepts connections and never answers (or, for TLS, answers garbage)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def loop() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            try:
                conn.recv(65536)
                conn.sendall(b"HELLO, NOT TLS\r\n\r\n")
            except OSError:
                pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    server.close()


def test_tls_failure_says_tls(capsys: pytest.CaptureFixture[str], silent_listener) -> None:
    port, _ = silent_listener
    code, _, err = run(capsys, "tools", "--url", f"https://127.0.0.1:{port}/mcp", "--timeout", "10")
    assert code == 3, err
    assert "TLS" in err
    assert "Max retries" not in err and "SSLError" not in err


def test_stdio_command_not_found_names_command_and_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "tools", "--stdio", "no-such-mcp-server-xyz --flag")
    assert code == 3
    assert "command not found: 'no-such-mcp-server-xyz'" in err
    assert "searched PATH=" in err


def test_hub_does_not_retry_a_missing_command(tmp_path: Path) -> None:
    from mcp_lite.hub import Backoff

    config = {"mcpServers": {"gone": {"command": str(tmp_path / "not-there")}}}
    with mcp_lite.Hub(config, backoff=Backoff(max_attempts=5, base=30.0)) as hub:
        with pytest.raises(mcp_lite.errors.CommandNotFound, match="no such file"):
            hub.client("gone")  # with retries this would take minutes
        status = hub.status()["gone"]
    assert status.state == "failed"
    assert status.attempts == 1


# --- mcp-lite auth -------------------------------------------------------------------------


def test_auth_against_a_server_without_authorization(capsys: pytest.CaptureFixture[str]) -> None:
    server = mcp_lite.Server("open")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with server.serve_http(port=0) as http:
        code, out, err = run(capsys, "auth", http.url, "--timeout", "10")
    assert code == 0, err
    assert "does not ask for authorization" in out


def test_auth_against_an_unreachable_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "auth", f"http://127.0.0.1:{closed_port()}/mcp", "--timeout", "5")
    assert code == 3
    assert "connection refused" in err
