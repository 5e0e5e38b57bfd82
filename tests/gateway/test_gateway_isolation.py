"""Isolation of the workers behind one gateway: every downstream session of a server shares
the gateway's one upstream connection, yet a worker sees only its own tasks (another user,
admitted by ``group=``, neither lists nor reads nor cancels them), a server's requests to its
client (elicitation, sampling, roots) made during a forwarded call reach the worker that made
the call, and a resource subscription lives through a recycle of its server.

The other user is real (``setpriv`` as nobody/nogroup, a raw client: ``other_user.py``); the
servers are real stdio processes (``tests/peers``) behind an in-process ``Gateway``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import HERE, PEERS, ROOT

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite.errors import MissingClientCapability

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def _as_nobody_possible() -> bool:
    return os.getuid() == 0 and os.path.exists("/usr/bin/python3")


@pytest.mark.skipif(not _as_nobody_possible(), reason="needs root and /usr/bin/python3")
def test_another_user_neither_lists_nor_reads_a_worker_s_tasks(short_dir: Path) -> None:
    short_dir.chmod(0o711)  # (nobody reaches the socket in it)
    task_server = [str(PEERS / "task_server.py"), "stdio", "2025-11-25"]
    hub = Hub({"mcpServers": {"tasks": {"command": sys.executable, "args": task_server}}},
              gateway=False)  # fmt: skip
    with Gateway(hub).start(str(short_dir / "iso.sock"), group=NOBODY) as gw:
        url = f"{gw.url}/servers/tasks/mcp"
        with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=20) as worker:
            mine = worker.call_tool_as_task("slow", {"seconds": 30})
            other = subprocess.run(
                [*SETPRIV, "/usr/bin/python3", str(HERE / "other_user.py"),
                 str(short_dir / "iso.sock"), "tasks", mine.id],
                capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"]},
            )  # fmt: skip
            assert other.returncode == 0, other.stderr[-2000:]
            seen = json.loads(other.stdout)
            # the other user: its own task only, and the worker's is as if it did not exist
            assert seen["listed"] == [seen["own"]]
            for asked in ("get", "result", "cancel"):
                error = seen[asked]["error"]
                assert error["code"] == -32602 and mine.id in error["message"], asked
                assert "result" not in seen[asked]
            # the worker: its task untouched, and only its own listed
            assert mine.status(timeout=10).status == "working"
            assert [t.task_id for t in worker.list_tasks(timeout=10)] == [mine.id]
            mine.cancel(timeout=10)


ASKING = str(PEERS / "asking_server.py")
ROOTS = [{"uri": "file:///srv/worker-a", "name": "a"}]


def _elicit(server: str, params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"answer": f"blue for {params.message}"}}


def _sample(server: str, params: Any) -> dict[str, Any]:
    text = params.messages[0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"re: {text}"}, "model": "m"}


@pytest.mark.parametrize(
    ("upstream", "era"),
    [("2025-11-25", "2025-11-25"), ("2026-07-28", "2025-11-25"), ("2026-07-28", "2026-07-28")],
)
def test_a_server_s_questions_reach_the_worker_whose_call_asks(
    short_dir: Path, upstream: str, era: str
) -> None:
    """The server's era, and the worker's (a 2026-07-28 worker answers input_required
    itself; a handshake-era one is asked on its request's stream)."""
    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, upstream]}}}
    with Gateway(Hub(config, gateway=False)).start(str(short_dir / "ask.sock")) as gw:
        options = {"protocol_version": era, "roots": ROOTS}
        with Hub(
            config, gateway=gw.url, elicitation_handler=_elicit, sampling_handler=_sample,
            client_options=options,
        ) as worker:  # fmt: skip
            asked = worker.call_tool("mcp__ask__ask", {"question": "colour?"}, timeout=20)
            assert worker.status()["ask"].via == "gateway"
            assert worker.client("ask").session.protocol_version == era
            assert asked.text == "accept: blue for colour?"
            sampled = worker.call_tool("mcp__ask__sample", {"prompt": "hi"}, timeout=20)
            assert sampled.text == "re: hi"
            roots = worker.call_tool("mcp__ask__roots", {}, timeout=20)
            if upstream == "2026-07-28":  # the worker's roots go with its request
                assert roots.text == "file:///srv/worker-a"
            else:  # a connection's roots would be every worker's: none are declared
                assert roots.is_error and "'roots'" in roots.text
        # a worker that declared none: refused as the server itself refuses it (it sees the
        # worker's capabilities), or, where it cannot (a handshake-era server asks the
        # gateway's connection), by the gateway, which says so
        url = f"{gw.url}/servers/ask/mcp"
        with mcp_lite.connect(url, protocol_version=era, timeout=20) as bare:
            if upstream == "2026-07-28":
                with pytest.raises(MissingClientCapability, match="'elicitation'"):
                    bare.call_tool("ask", {"question": "colour?"}, timeout=20)
            else:
                refused = bare.call_tool("ask", {"question": "colour?"}, timeout=20)
                assert refused.is_error
                assert "gateway" in refused.text
                assert "did not declare the 'elicitation'" in refused.text


def _wait(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_subscription_lives_through_a_recycle_and_reaches_its_worker_only(
    short_dir: Path, era: str
) -> None:
    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, era]}}}
    hub = Hub(config, gateway=False, idle_timeout=0.3)
    updates: dict[str, list[str]] = {"a": [], "b": []}

    def heard(who: str) -> Callable[[str, Any], None]:
        def handler(method: str, params: Any) -> None:
            if method == "notifications/resources/updated":
                updates[who].append(params.uri)

        return handler

    with Gateway(hub).start(str(short_dir / "sub.sock")) as gw:
        url = f"{gw.url}/servers/ask/mcp"
        with (
            mcp_lite.connect(url, protocol_version=era, notification_handler=heard("a")) as a,
            mcp_lite.connect(url, protocol_version=era, notification_handler=heard("b")) as b,
        ):
            a.subscribe_resource("mem://counter", timeout=20)
            before = b.call_tool("pid", timeout=20).text
            assert b.call_tool("bump", timeout=20).text == "bumped"
            # (on a slow machine a recycle may already have come between two calls: its
            # "read again" notice then joins the update, hence "in", not "==")
            assert _wait(lambda: "mem://counter" in updates["a"])
            # the gateway recycles the idle server; the next call starts a new process, on
            # which A's subscription is made again (and A told to read again)
            assert _wait(lambda: hub.status()["ask"].state == "idle")
            assert b.call_tool("pid", timeout=20).text != before
            assert _wait(lambda: len(updates["a"]) >= 2)
            heard_so_far = len(updates["a"])
            assert b.call_tool("bump", timeout=20).text == "bumped"
            assert _wait(lambda: len(updates["a"]) > heard_so_far), "no update after a recycle"
            assert set(updates["a"]) == {"mem://counter"}
            # B, which subscribed to nothing, heard nothing of A's subscription
            assert updates["b"] == []


def test_a_2026_subscription_is_in_place_upstream_when_the_worker_hears_it_acknowledged(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway acknowledges a 2026-07-28 listen stream only once it has subscribed
    upstream: a change made right after ``subscribe_resource`` returns reaches the worker,
    however slow the upstream subscription (made slower here)."""
    from mcp_lite.gateway import forwarding

    original = forwarding._Endpoint.watch_listen

    def slow_watch(self: Any, *args: Any) -> None:
        time.sleep(0.5)  # an upstream that takes its time to subscribe
        original(self, *args)

    monkeypatch.setattr(forwarding._Endpoint, "watch_listen", slow_watch)
    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, "2026-07-28"]}}}
    updated = threading.Event()

    def heard(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            updated.set()

    with Gateway(Hub(config, gateway=False)).start(str(short_dir / "ack.sock")) as gw:
        url = f"{gw.url}/servers/ask/mcp"
        with (
            mcp_lite.connect(url, protocol_version="2026-07-28", notification_handler=heard) as a,
            mcp_lite.connect(url, protocol_version="2026-07-28") as b,
        ):
            a.subscribe_resource("mem://counter", timeout=20)
            assert b.call_tool("bump", timeout=20).text == "bumped"
            assert updated.wait(20), "the update of a change after the subscription was lost"


def test_a_2026_worker_answering_its_user_slowly_keeps_its_server(short_dir: Path) -> None:
    """Between a 2026-07-28 worker's input rounds (its user is asked) the gateway holds the
    server against its own idle recycle: the next round reaches the same process, whose
    requestState it carries."""
    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, "2026-07-28"]}}}
    hub = Hub(config, gateway=False, idle_timeout=0.2)
    asked = threading.Event()

    def slow_user(server: str, params: Any) -> dict[str, Any]:
        asked.set()
        time.sleep(1.0)  # five idle timeouts of the gateway's server
        return {"action": "accept", "content": {"answer": "late"}}

    with Gateway(hub).start(str(short_dir / "slow.sock")) as gw:
        options = {"protocol_version": "2026-07-28"}
        with Hub(config, gateway=gw.url, elicitation_handler=slow_user,
                 client_options=options) as worker:  # fmt: skip
            answer = worker.call_tool("mcp__ask__ask", {"question": "q"}, timeout=30)
            assert asked.is_set() and answer.text == "accept: late"
            assert hub.status()["ask"].recycles == 0


def test_a_task_s_question_reaches_the_worker_collecting_it_among_others(
    short_dir: Path,
) -> None:
    """A 2025-11-25 task asks its user while its worker waits for its result: the request
    names the task, so the gateway finds that worker even while another worker's call is in
    flight on the same server (which, without the task's name, it could not tell apart)."""
    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, "2025-11-25"]}}}
    with Gateway(Hub(config, gateway=False)).start(str(short_dir / "task.sock")) as gw:
        url = f"{gw.url}/servers/ask/mcp"
        with (
            mcp_lite.connect(url, protocol_version="2025-11-25", timeout=30) as other,
            mcp_lite.connect(
                url, protocol_version="2025-11-25", timeout=30,
                elicitation_handler=lambda p: {"action": "accept", "content": {"answer": "A"}},
            ) as collector,
        ):  # fmt: skip
            calls = gw._apps["ask"].server.calls  # (the gateway's calls in flight there)
            busy = threading.Thread(target=lambda: other.call_tool("wait", {"seconds": 4}))
            busy.start()
            assert _wait(lambda: len(calls._calls) == 1)  # the other worker's call in flight
            task = collector.call_tool_as_task("ask_later", {"question": "q"}, timeout=20)
            assert task.result(timeout=20).text == "accept: A"
            busy.join(30)


@pytest.mark.skipif(not _as_nobody_possible(), reason="needs root and /usr/bin/python3")
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_another_user_s_worker_cannot_resume_a_task_in_either_era(
    short_dir: Path, era: str
) -> None:
    """The same, with mcp_lite as the other user's worker (resume_task, cancel)."""
    short_dir.chmod(0o711)
    version = "2025-11-25" if era == "2025-11-25" else "all"
    task_server = [str(PEERS / "task_server.py"), "stdio", version]
    hub = Hub({"mcpServers": {"tasks": {"command": sys.executable, "args": task_server}}},
              gateway=False)  # fmt: skip
    with Gateway(hub).start(str(short_dir / "era.sock"), group=NOBODY) as gw:
        url = f"{gw.url}/servers/tasks/mcp"
        with mcp_lite.connect(url, protocol_version=era, timeout=20) as worker:
            mine = worker.call_tool_as_task("slow", {"seconds": 30})
            site = Path(sysconfig.get_paths()["purelib"])
            env = {"PATH": os.environ["PATH"], "HOME": "/tmp",
                   "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}  # fmt: skip
            other = subprocess.run(
                [*SETPRIV, "/usr/bin/python3", str(HERE / "other_user_client.py"), url, era,
                 mine.id],
                capture_output=True, text=True, timeout=60, env=env,
            )  # fmt: skip
            assert other.returncode == 0, other.stderr[-2000:]
            seen = json.loads(other.stdout)
            assert seen["listed"] in (None, [seen["own"]])
            for what in ("resume", "cancel"):
                assert seen[what] and "InvalidParams" in seen[what], what
                assert mine.id in seen[what]
            assert mine.status(timeout=10).status == "working"
            mine.cancel(timeout=10)


def test_only_the_worker_asked_can_answer_the_server_s_request() -> None:
    """The id of a request the gateway sends a worker cannot be guessed, and an answer to it
    from another session does not count (another worker cannot answer for the user)."""
    from mcp_lite.gateway.asks import Answers

    answers = Answers()
    asked, other = object(), object()
    first, second = answers.new(asked), answers.new(asked)
    assert first.rsplit("-", 1)[1] != second.rsplit("-", 1)[1]  # (a random part)
    assert not answers.answer({"id": first, "result": {"forged": True}}, other)
    assert answers.answer({"id": first, "result": {"action": "accept"}}, asked)
    assert answers.wait(first, "elicitation/create", threading.Event(), 5) == {"action": "accept"}


def test_a_question_for_a_json_only_request_fails_at_once_and_says_why(short_dir: Path) -> None:
    """A worker whose request accepts JSON only has no stream to be asked on: the server's
    question is refused at once (naming the gateway), not left to the server's timeout."""
    from other_user import _Unix

    config = {"mcpServers": {"ask": {"command": sys.executable, "args": [ASKING, "2025-11-25"]}}}
    with Gateway(Hub(config, gateway=False)).start(str(short_dir / "json.sock")) as gw:
        conn = _Unix(gw.socket_path or "")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        caps = {"elicitation": {}}

        def post(body: dict[str, Any]) -> Any:
            conn.request("POST", "/servers/ask/mcp", json.dumps(body), headers)
            response = conn.getresponse()
            session = response.headers.get("Mcp-Session-Id")
            if session:
                headers["Mcp-Session-Id"] = session
            text = response.read()
            return json.loads(text) if text else None

        post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": caps,
                         "clientInfo": {"name": "json-only", "version": "1"}}})  # fmt: skip
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        start = time.monotonic()
        answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "ask", "arguments": {"question": "q"}}})  # fmt: skip
        assert time.monotonic() - start < 10
        text = answer["result"]["content"][0]["text"]
        assert answer["result"]["isError"] and "gateway" in text and "application/json" in text
        conn.close()
