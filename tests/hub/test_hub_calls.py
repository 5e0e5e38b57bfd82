"""Hub.call_tool as a host sees it: permissions, progress events, truncated text, binary
content saved to files, elicitation hooks, URL-elicitation retry, expired sessions, threads
and fork."""

from __future__ import annotations

import base64
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import PermissionDenied, RequestTimeout, UrlElicitationRequired
from mcp_lite.hub import Hub, McpTool, ToolEvent

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO]}


def _server(calls: list[str] | None = None) -> mcp_lite.Server:
    server = mcp_lite.Server("kit")
    seen = calls if calls is not None else []

    @server.tool()
    def echo(text: str) -> str:
        seen.append(text)
        return text

    @server.tool()
    def wipe() -> str:
        seen.append("wipe")
        return "wiped"

    @server.tool()
    def media():  # no annotation: no outputSchema, the dict is the whole result
        wav = b"RIFF\x00\x00\x00\x00WAVEfmt "
        return {"content": [
            {"type": "text", "text": "here you go"},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
            {"type": "audio", "data": base64.b64encode(wav).decode(), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "kit://report.pdf",
                                              "mimeType": "application/pdf",
                                              "blob": base64.b64encode(b"%PDF-1.4").decode()}},
        ]}

    return server


# --- permissions ------------------------------------------------------------------------------


def test_in_process_tools_are_allowed_by_default_even_when_the_policy_is_deny() -> None:
    with Hub({"kit": _server()}, default_permission="deny") as hub:
        assert hub.call_tool("mcp__kit__echo", {"text": "hi"}).text == "hi"


def test_deny_wins_over_allow_and_over_in_process() -> None:
    calls: list[str] = []
    with Hub({"kit": _server(calls)}, allow=["mcp__kit"], deny=["mcp__kit__wipe"]) as hub:
        with pytest.raises(PermissionDenied, match="mcp__kit__wipe") as info:
            hub.call_tool("mcp__kit__wipe")
        assert info.value.tool == "mcp__kit__wipe"
        assert hub.call_tool("mcp__kit__echo", {"text": "ok"}).text == "ok"
    assert calls == ["ok"]  # the denied tool never ran


def test_a_denied_server_is_not_even_started() -> None:
    with Hub({"demo": _demo()}, deny=["mcp__demo"]) as hub:
        with pytest.raises(PermissionDenied):
            hub.call_tool("mcp__demo__add", {"a": 1, "b": 1})
        assert hub.status()["demo"].state == "pending"


def test_default_policy_deny_with_allow_rules_for_stdio_servers() -> None:
    with Hub({"demo": _demo()}, default_permission="deny", allow=["mcp__demo__add"]) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"
        with pytest.raises(PermissionDenied, match="default policy"):
            hub.call_tool("mcp__demo__word_count", {"text": "a b"})


def test_passthrough_asks_the_permission_handler_with_the_tool_and_arguments() -> None:
    asked: list[tuple[McpTool, dict[str, Any]]] = []

    def handler(tool: McpTool, args: dict[str, Any]) -> bool:
        asked.append((tool, dict(args)))
        return tool.read_only

    with Hub({"demo": _demo()}, permission_handler=handler) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
        with pytest.raises(PermissionDenied, match="permission handler"):
            hub.call_tool("mcp__demo__countdown", {"n": 1})
    assert [(t.name, a) for t, a in asked] == [("mcp__demo__add", {"a": 1, "b": 2}),
                                               ("mcp__demo__countdown", {"n": 1})]


def test_malformed_rules_are_config_errors() -> None:
    with pytest.raises(mcp_lite.ConfigError, match="mcp__server"):
        Hub({}, allow=["Bash(ls)"])
    with pytest.raises(mcp_lite.ConfigError):
        Hub({}, default_permission="ask")  # type: ignore[arg-type]


# --- progress events ----------------------------------------------------------------------------


def test_progress_events_started_progress_completed(inprocess_demo) -> None:
    events: list[ToolEvent] = []
    with Hub({"demo": inprocess_demo()}) as hub:
        assert hub.call_tool("mcp__demo__countdown", {"n": 3}, on_event=events.append).text \
            == "liftoff"
    kinds = [e.status for e in events]
    assert kinds[0] == "started" and kinds[-1] == "completed"
    progress = [e for e in events if e.status == "progress"]
    assert [p.progress for p in progress] == [0, 1, 2, 3]
    assert progress[0].total == 3 and progress[0].message == "3 to go"
    assert {(e.server, e.tool) for e in events} == {("demo", "mcp__demo__countdown")}
    assert isinstance(events[-1].elapsed_ms, int) and events[-1].elapsed_ms >= 0


def test_a_failing_call_ends_with_a_failed_event(inprocess_demo) -> None:
    events: list[ToolEvent] = []
    with Hub({"demo": inprocess_demo()}) as hub, pytest.raises(RequestTimeout):
        hub.tools()  # connected first: the call's 0.3 s would also bound the first-use connect
        hub.call_tool("mcp__demo__countdown", {"n": 30}, timeout=0.3, on_event=events.append)
    assert [e.status for e in events][0] == "started"
    assert events[-1].status == "failed" and "no answer" in (events[-1].error or "")
    assert events[-1].elapsed_ms is not None


# --- results --------------------------------------------------------------------------------------


def test_large_text_is_truncated_with_a_note() -> None:
    server = mcp_lite.Server("big")

    @server.tool()
    def dump(n: int) -> str:
        return "y" * n

    with Hub({"big": server}, max_output_tokens=100) as hub:
        small = hub.call_tool("mcp__big__dump", {"n": 400})
        assert small.text == "y" * 400
        big = hub.call_tool("mcp__big__dump", {"n": 10_000})
    assert big.content[0].text == "y" * 400
    assert "OUTPUT TRUNCATED" in big.text and "100-token limit" in big.text
    assert len(big.text) < 1000


def test_the_output_limit_comes_from_max_mcp_output_tokens(monkeypatch) -> None:
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "50")
    server = mcp_lite.Server("big")

    @server.tool()
    def dump() -> str:
        return "z" * 1000

    with Hub({"big": server}) as hub:
        result = hub.call_tool("mcp__big__dump")
    assert result.content[0].text == "z" * 200 and "50-token limit" in result.text


def test_images_audio_and_blobs_are_written_to_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Hub({"kit": _server()}, output_dir=out) as hub:
        result = hub.call_tool("mcp__kit__media")
    assert [b.type for b in result.content] == ["text"] * 4
    assert result.content[0].text == "here you go"
    files = sorted(out.iterdir())
    assert len(files) == 3
    by_suffix = {f.suffix: f for f in files}
    assert set(by_suffix) == {".png", ".wav", ".pdf"}
    assert by_suffix[".png"].read_bytes() == PNG
    assert by_suffix[".pdf"].read_bytes() == b"%PDF-1.4"
    for block, kind in zip(result.content[1:], ("image", "audio", "resource"), strict=True):
        assert kind in (block.text or "")
        assert any(str(f) in (block.text or "") for f in files)
    assert "base64" not in result.text


def test_without_an_output_dir_binary_content_goes_to_a_private_temp_folder() -> None:
    with Hub({"kit": _server()}) as hub:
        result = hub.call_tool("mcp__kit__media")
    path = Path(result.content[1].text.rsplit(" saved to ", 1)[1].rstrip("]"))
    try:
        assert path.read_bytes() == PNG
        assert path.parent.name.startswith("mcp-lite-output-")
    finally:
        for f in path.parent.iterdir():
            f.unlink()
        path.parent.rmdir()


# --- elicitation ------------------------------------------------------------------------------------


def _asking_server() -> mcp_lite.Server:
    server = mcp_lite.Server("ask")

    @server.tool()
    def book(ctx: mcp_lite.Context) -> str:
        answer = ctx.elicit("Which seat?", {"type": "object",
                                            "properties": {"seat": {"type": "string"}}})
        if answer.get("action") != "accept":
            return f"no booking ({answer.get('action')})"
        return f"booked {answer['content']['seat']}"

    return server


def test_an_elicitation_hook_answers_before_the_handler() -> None:
    seen: list[str] = []

    def hook(server: str, params: Any) -> dict[str, Any] | None:
        seen.append(f"hook {server} {params.message}")
        return {"action": "accept", "content": {"seat": "12A"}}

    def handler(server: str, params: Any) -> dict[str, Any]:
        seen.append("handler")
        return {"action": "decline"}

    with Hub({"ask": _asking_server()}, elicitation_hooks=[hook],
             elicitation_handler=handler) as hub:
        assert hub.call_tool("mcp__ask__book").text == "booked 12A"
    assert seen == ["hook ask Which seat?"]


def test_a_hook_that_passes_leaves_it_to_the_handler_and_none_cancels() -> None:
    with Hub({"ask": _asking_server()}, elicitation_hooks=[lambda s, p: None],
             elicitation_handler=lambda s, p: {"action": "decline"}) as hub:
        assert hub.call_tool("mcp__ask__book").text == "no booking (decline)"
    with Hub({"ask": _asking_server()}, elicitation_hooks=[lambda s, p: None]) as hub:
        assert hub.call_tool("mcp__ask__book").text == "no booking (cancel)"


def _url_server(done: threading.Event) -> mcp_lite.Server:
    server = mcp_lite.Server("pay")

    @server.tool()
    def pay() -> str:
        if not done.is_set():
            raise UrlElicitationRequired("authorize the payment first", data={"elicitations": [
                {"mode": "url", "url": "https://pay.example/authorize", "elicitationId": "e-1",
                 "message": "Authorize the payment"}]})
        return "paid"

    return server


def test_a_url_elicitation_required_error_is_elicited_then_retried() -> None:
    done = threading.Event()
    visited: list[str] = []

    def hook(server: str, params: Any) -> dict[str, Any]:
        visited.append(f"{server} {params.mode} {params.url}")
        done.set()  # the user completed the flow in the browser
        return {"action": "accept"}

    with Hub({"pay": _url_server(done)}, elicitation_hooks=[hook],
             elicitation_timeout=0.1) as hub:
        assert hub.call_tool("mcp__pay__pay").text == "paid"
    assert visited == ["pay url https://pay.example/authorize"]


def test_a_declined_url_elicitation_raises_the_original_error() -> None:
    done = threading.Event()
    with Hub({"pay": _url_server(done)}, elicitation_handler=lambda s, p: {"action": "decline"},
             elicitation_timeout=0.1) as hub, pytest.raises(UrlElicitationRequired):
        hub.call_tool("mcp__pay__pay")


# --- sessions, threads, fork ---------------------------------------------------------------------------




def test_an_expired_session_is_reopened_and_the_call_retried(fault_server) -> None:
    with Hub({"remote": {"type": "http", "url": fault_server.url("/mcp")}}) as hub:
        assert hub.status()["remote"].type == "http"
        assert hub.call_tool("mcp__remote__expire").text == "fresh session"
        assert hub.call_tool("mcp__remote__echo", {"x": 1}).text


def test_many_threads_share_one_connection(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    script = ("import os, runpy, sys\n"
              "c = sys.argv[1]\n"
              "n = int(open(c).read()) if os.path.exists(c) else 0\n"
              "open(c, 'w').write(str(n + 1))\n"
              f"sys.argv = [{DEMO!r}]\n"
              f"runpy.run_path({DEMO!r}, run_name='__main__')\n")
    config = {"demo": {"command": sys.executable, "args": ["-c", script, str(counter)]}}
    results: list[str] = []
    errors: list[BaseException] = []
    with Hub(config) as hub:
        def work(i: int) -> None:
            try:
                results.append(hub.call_tool("mcp__demo__add", {"a": i, "b": 1}).text)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert errors == []
    assert sorted(int(r) for r in results) == list(range(1, 21))
    assert counter.read_text() == "1"  # one server process for all of them


def test_after_fork_the_child_uses_its_own_server(
    in_fork, pid_gone, no_leftover_processes
) -> None:
    hub = Hub({"demo": _demo()})
    assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"
    parent_pid = hub.client("demo").transport.pid

    def child() -> str:
        text = hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text
        child_pid = hub.client("demo").transport.pid
        hub.close()
        return f"{text} {child_pid}"

    report = in_fork(child)
    text, child_pid = report.split()
    assert text == "4" and int(child_pid) != parent_pid and pid_gone(int(child_pid))
    assert hub.client("demo").transport.pid == parent_pid
    assert hub.call_tool("mcp__demo__add", {"a": 3, "b": 3}).text == "6"
    hub.close()
    no_leftover_processes()


def test_large_images_are_shrunk_when_pillow_is_installed(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image", reason="the optional images extra (Pillow)")
    import io

    buffer = io.BytesIO()
    image.new("RGB", (3000, 40), (200, 30, 30)).save(buffer, format="PNG")
    big = base64.b64encode(buffer.getvalue()).decode()
    server = mcp_lite.Server("pics")

    @server.tool()
    def banner():  # no annotation: the dict is the whole result
        return {"content": [{"type": "image", "data": big, "mimeType": "image/png"}]}

    out = tmp_path / "out"
    with Hub({"pics": server}, output_dir=out) as hub:
        hub.call_tool("mcp__pics__banner")
    [saved] = list(out.iterdir())
    with image.open(saved) as img:
        assert img.size == (2000, 27)
