"""The deadline matrix, local rows: every public blocking operation of ``Client`` and ``Hub``
against each hostile stdio (and in-process) peer, with a small timeout.

Each cell asserts that the operation ends with an ``McpError`` within its timeout plus a slack
of under a second, that the message names the phase it was in, and (``no_leaks``) that no
thread, fd or child process is left behind. The Hub's pool operations (``tools``,
``tool_definitions``, ``reconnect``) never raise for one bad server: their cells assert that
they return in time and that the bad server's status names the phase.

The peers (``tests/peers/hostile_stdio.py``): ``silent`` never answers; ``mute`` answers the
handshake (and the discover probe) then nothing; ``pages`` hands out a new cursor every page,
forever (one page every 50 ms: no page is late, the list is); ``lists`` answers ``tools/list``
but no call. Run on both kernel builds (``MCP_LITE_NO_EXTENSIONS=1`` for the pure twin).

Two timeouts (issue 35): each kind (a stdio process, an in-process server) meets each peer
once at the documented ``TIMEOUT``; the operation dimension (phase names, paging, task-first
calls, the Hub's pool operations) is the Client's and the Hub's, not the transport's, and runs
against in-process peers at ``SHORT``.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from hostile_targets import HOSTILE, HostileServer, stdio_target, target

from mcp_lite import Client, Hub, connect
from mcp_lite.errors import ConfigError, McpError
from mcp_lite.hub import Backoff

TIMEOUT = 1.0
SHORT = 0.2  # the per-operation cells: the same deadline, less waiting
SLACK = 0.9  # "within its timeout plus a slack of under a second"
KINDS = ("stdio", "inprocess")

pytestmark = pytest.mark.usefixtures("no_leaks")


def ends_in_time(run: Callable[[], Any], phase: str, timeout: float = TIMEOUT) -> McpError:
    """Run ``run``; it must raise an McpError naming ``phase`` (a regex) in time."""
    start = time.monotonic()
    with pytest.raises(McpError) as caught:
        run()
    elapsed = time.monotonic() - start
    assert elapsed < timeout + SLACK, f"ended after {elapsed:.2f} s: {caught.value}"
    assert re.search(phase, str(caught.value)), f"the phase {phase!r} is not named: {caught.value}"
    return caught.value


# --- connect ---------------------------------------------------------------------------------------

CONNECT_CELLS = [
    pytest.param(kind, version, options, id=f"{kind}-{name}")
    for kind in KINDS
    for name, version, options in (
        ("auto", "auto", {}),
        ("auto-discover_timeout-30", "auto", {"discover_timeout": 30.0}),
        ("pinned-2024-11-05", "2024-11-05", {}),
        ("pinned-2025-11-25", "2025-11-25", {}),
        ("pinned-2026-07-28", "2026-07-28", {}),
    )
]


@pytest.mark.parametrize(("kind", "version", "options"), CONNECT_CELLS)
def test_connect_to_a_silent_server(kind: str, version: str, options: dict[str, Any]) -> None:
    """The whole connect (start, probe, initialize) is one deadline: ~4 s before for auto."""
    ends_in_time(
        lambda: connect(
            target(kind, "silent"), timeout=TIMEOUT, protocol_version=version, **options
        ),
        r"^connecting: (initialize|server/discover) got no answer .* within the 1 s timeout",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_connect_to_a_server_ignoring_the_probe_fits_in_the_timeout(kind: str) -> None:
    """``discover_timeout`` is a cap inside the deadline: the probe leaves the handshake time."""
    start = time.monotonic()
    with connect(target(kind, "no-discover"), timeout=TIMEOUT) as client:
        assert client.session.era == "handshake"
        assert time.monotonic() - start < TIMEOUT + SLACK
        client.ping(timeout=TIMEOUT)


# --- client operations ------------------------------------------------------------------------------

# op name -> (call with its timeout, the phase it names on a server answering nothing after
# the handshake)
OPS: dict[str, tuple[Callable[[Client, float], Any], str]] = {
    "call_tool": (lambda c, t: c.call_tool("echo", {}, timeout=t), r"tools/call"),
    "list_tools": (lambda c, t: c.list_tools(timeout=t), r"^listing tools: page 1 "),
    "list_resources": (lambda c, t: c.list_resources(timeout=t), r"^listing resources: page 1"),
    "list_resource_templates": (
        lambda c, t: c.list_resource_templates(timeout=t),
        r"^listing resource templates: page 1",
    ),
    "list_prompts": (lambda c, t: c.list_prompts(timeout=t), r"^listing prompts: page 1"),
    "list_tasks": (lambda c, t: c.list_tasks(timeout=t), r"^listing tasks: page 1"),
    "list_skills": (lambda c, t: c.list_skills(timeout=t), r"^listing skills: page 1"),
    "read_resource": (lambda c, t: c.read_resource("file:///x", timeout=t), r"resources/read"),
    "get_skill": (lambda c, t: c.get_skill("skill://x/SKILL.md", timeout=t), r"skills/get"),
    # an unknown URI: the entry's lookup and the read share the one deadline
    "load_skill": (lambda c, t: c.load_skill("skill://x/SKILL.md", timeout=t), r"skills/get"),
    "subscribe_resource": (
        lambda c, t: c.subscribe_resource("file:///x", timeout=t),
        r"resources/subscribe",
    ),
    "unsubscribe_resource": (
        lambda c, t: c.unsubscribe_resource("file:///x", timeout=t),
        r"resources/unsubscribe",
    ),
    "set_log_level": (lambda c, t: c.set_log_level("info", timeout=t), r"logging/setLevel"),
    "get_prompt": (lambda c, t: c.get_prompt("p", timeout=t), r"prompts/get"),
    "complete": (
        lambda c, t: c.complete({"type": "ref/prompt", "name": "p"}, "a", "", timeout=t),
        r"completion/complete",
    ),
    "ping": (lambda c, t: c.ping(timeout=t), r"ping|server/discover"),
    "request": (lambda c, t: c.request("tools/list", {}, timeout=t), r"tools/list"),
    "submit": (
        lambda c, t: c.submit("tools/call", {"name": "echo"}, timeout=t).result(t + 5),
        r"tools/call",
    ),
}
LISTS = [op for op in OPS if op.startswith("list_")]
# On 2026-07-28 these send nothing that waits: a subscription opens the listen stream, and
# the log level travels with each request.
NOT_BLOCKING_2026 = ("subscribe_resource", "unsubscribe_resource", "set_log_level")
# Against pages forever, the deadline finds the list between two pages or in one.
_LATE_PAGE = r"page \d+ (was not reached|got no answer)"

# peer name -> (mode, era, tasks, the ops it is a cell for, a phase replacing the op's own)
PEERS: dict[str, tuple[str, str, bool, list[str], str | None]] = {
    # never connected: the operation's first use connects, on the operation's deadline
    "silent-first-use": ("silent", "handshake", True, list(OPS), r"^connecting: "),
    "mute": ("mute", "handshake", True, [op for op in OPS if op != "call_tool"], None),
    "mute-no-tasks": ("mute", "handshake", False, ["call_tool"], None),
    # a task-capable server: call_tool first looks up the tool list, on the call's deadline
    "mute-tasks": ("mute", "handshake", True, ["call_tool"], r"^listing tools: page 1"),
    "mute-2026": (
        "mute",
        "stateless",
        False,
        [op for op in OPS if op != "list_tasks" and op not in NOT_BLOCKING_2026],
        None,
    ),
    "pages": ("pages", "handshake", True, [*LISTS, "call_tool"], r"^listing \w+( \w+)?: page "),
    "pages-2026": ("pages", "stateless", False, [op for op in LISTS if op != "list_tasks"], None),
}


def _op_cells() -> list[Any]:
    """Every operation against every peer in-process at ``SHORT``; the stdio kind against each
    peer once (its first operation) at the documented ``TIMEOUT``."""
    cells = []
    for peer, (_, _, _, ops, _) in PEERS.items():
        cells.append(pytest.param("stdio", peer, ops[0], TIMEOUT, id=f"stdio-{peer}-{ops[0]}"))
        for op in ops:
            cells.append(pytest.param("inprocess", peer, op, SHORT, id=f"inprocess-{peer}-{op}"))
    return cells


@pytest.mark.parametrize(("kind", "peer", "op", "timeout"), _op_cells())
def test_client_operation(kind: str, peer: str, op: str, timeout: float) -> None:
    mode, era, tasks, _, phase = PEERS[peer]
    call, own_phase = OPS[op]
    if mode == "pages" and op in LISTS:  # every page answered: the list as a whole is late
        own_phase = own_phase.replace("page 1", _LATE_PAGE)
    client = Client(target(kind, mode, era, tasks), timeout=30.0)
    try:
        if mode != "silent":
            client.open()  # connected with the client's own (long) timeout first
        ends_in_time(lambda: call(client, timeout), phase or own_phase, timeout)
    finally:
        client.close()


def _slow_roots() -> list[dict[str, str]]:
    time.sleep(0.4)  # a handler that takes its time, every round
    return [{"uri": "file:///tmp"}]


@pytest.mark.parametrize("how", ["call_tool", "submit"])
@pytest.mark.parametrize("kind", KINDS)
def test_input_rounds_run_on_the_calls_deadline(kind: str, how: str) -> None:
    """2026-07-28 ``input_required`` rounds share the call's one deadline (before: each round
    got a fresh timeout, so 16 rounds of a 0.4 s handler ran 6.4 s)."""
    client = Client(target(kind, "asks", "stateless"), timeout=30.0, roots_handler=_slow_roots)
    try:
        client.open()
        if how == "call_tool":
            ends_in_time(lambda: client.call_tool("echo", {}, timeout=TIMEOUT), r"tools/call")
        else:
            future = client.submit("tools/call", {"name": "echo"}, timeout=TIMEOUT)
            ends_in_time(lambda: future.result(TIMEOUT + 10), r"tools/call")
    finally:
        client.close()


def test_a_call_to_a_server_that_stopped_reading_fails_in_time(wait_until: Any) -> None:
    """stdio ``deaf``: after the handshake it closes stdin and stderr and keeps running. The
    call's write fails at once; the wait for the server's last words and exit code that
    follows (none come) is bounded by the call's deadline."""
    client = Client(stdio_target("deaf"), timeout=30.0)
    try:
        client.open()
        transport = client.transport
        assert wait_until(lambda: transport._stderr_ended.is_set())  # type: ignore[union-attr]
        for timeout in (0.1, TIMEOUT):  # below the last-words cap, and above it
            ends_in_time(
                lambda: client.call_tool("echo", {}, timeout=timeout),  # noqa: B023
                # The Client sends the unsent call once more, on a new connection: to a new
                # deaf server that either has not closed stdin yet (no answer: the deadline)
                # or has (the write fails again). Either way the error names the call, and
                # when no time was left for the retry, why it retried.
                r"tools/call",
                timeout,
            )
    finally:
        client.close()


# --- the Hub ---------------------------------------------------------------------------------------

# entry name -> (the entry, phase of Hub.call_tool, phase in status() after a pool operation)
ENTRIES: dict[str, tuple[Callable[[], Any], str, str | None]] = {
    "stdio-silent": (
        lambda: {"command": sys.executable, "args": [str(HOSTILE), "silent"]},
        r"^connecting: ",
        r"^connecting: ",
    ),
    "stdio-mute": (
        lambda: {"command": sys.executable, "args": [str(HOSTILE), "mute"]},
        r"^listing tools: page 1",
        None,
    ),
    "stdio-pages": (
        lambda: {"command": sys.executable, "args": [str(HOSTILE), "pages"]},
        r"^listing tools: " + _LATE_PAGE,
        None,
    ),
    "stdio-lists": (
        lambda: {"command": sys.executable, "args": [str(HOSTILE), "lists"]},
        r"tools/call",
        None,
    ),
    # a misconfigured entry: a REPL that never answers (198 s before)
    "python-i": (
        lambda: {"command": sys.executable, "args": ["-i"]},
        r"^connecting: ",
        r"^connecting: ",
    ),
    # a misspelt key: dropped today (python then reads a script from stdin, forever); a
    # ConfigError naming the key once unknown keys are refused
    "misspelt-arg": (
        lambda: {"command": sys.executable, "arg": [str(HOSTILE), "mute"]},
        r"^connecting: |'arg'",
        r"^connecting: |'arg'",
    ),
    "inprocess-silent": (lambda: HostileServer("silent"), r"^connecting: ", r"^connecting: "),
    "inprocess-mute": (lambda: HostileServer("mute"), r"^listing tools: page 1", None),
    "inprocess-pages": (
        lambda: HostileServer("pages"),
        r"^listing tools: " + _LATE_PAGE,
        None,
    ),
}
HUB_OPS: dict[str, Callable[[Hub, float], Any]] = {
    "tools": lambda hub, t: hub.tools(timeout=t),
    "tool_definitions": lambda hub, t: hub.tool_definitions(timeout=t),
    "reconnect": lambda hub, t: hub.reconnect("bad", timeout=t),
    "resources": lambda hub, t: hub.resources(timeout=t),
    "prompts": lambda hub, t: hub.prompts(timeout=t),
    "skills": lambda hub, t: hub.skills(timeout=t),
}


def _hub(entry: str) -> Hub:
    # backoff waits shorter than the timeout: a retry would fit, if the deadline let it
    return Hub({"bad": ENTRIES[entry][0]()}, backoff=Backoff(base=0.2, max_attempts=3))


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_hub_call_tool(entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One deadline: first-use connect (every attempt and backoff wait), tool list, call."""
    monkeypatch.delenv("MCP_TIMEOUT", raising=False)
    monkeypatch.delenv("MCP_TOOL_TIMEOUT", raising=False)
    with _hub(entry) as hub:
        ends_in_time(
            lambda: hub.call_tool("mcp__bad__echo", {}, timeout=TIMEOUT), ENTRIES[entry][1]
        )


def _pool_cells() -> list[Any]:
    """Every pool operation on the in-process entries (and the refused one) at ``SHORT``; each
    stdio entry once (``tools``) at the documented ``TIMEOUT``."""
    cells = []
    for entry in ENTRIES:
        every = entry.startswith("inprocess-") or entry == "misspelt-arg"
        for op in HUB_OPS if every else ["tools"]:
            timeout = SHORT if every else TIMEOUT
            cells.append(pytest.param(entry, op, timeout, id=f"{entry}-{op}"))
    return cells


@pytest.mark.parametrize(("entry", "op", "timeout"), _pool_cells())
def test_hub_pool_operation(
    entry: str, op: str, timeout: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TIMEOUT", raising=False)
    with _hub(entry) as hub:
        start = time.monotonic()
        try:
            HUB_OPS[op](hub, timeout)
        except ConfigError as exc:  # an entry refused as invalid: at once, naming the key
            assert "'arg'" in str(exc)
        elapsed = time.monotonic() - start
        assert elapsed < timeout + SLACK, f"{op} ended after {elapsed:.2f} s"
        phase = ENTRIES[entry][2]
        if phase is not None:
            status = hub.status()["bad"]
            # failed, or (a caller's deadline, not the configured total, ran out) pending
            assert status.state in ("failed", "pending"), status
            assert re.search(phase, status.error or ""), status.error


@pytest.mark.parametrize("entry", ["stdio-silent", "python-i", "inprocess-silent"])
def test_hub_mcp_timeout_is_a_total_of_the_connect(
    entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MCP_TIMEOUT`` bounds a first-use connect as a whole: attempts and backoff included
    (before: each of 3 attempts got all of it, with the backoff waits between them)."""
    monkeypatch.setenv("MCP_TIMEOUT", str(int(TIMEOUT * 1000)))
    monkeypatch.delenv("MCP_TOOL_TIMEOUT", raising=False)
    with _hub(entry) as hub:
        ends_in_time(lambda: hub.call_tool("mcp__bad__echo", {}), r"^connecting: ")


def test_hub_mcp_tool_timeout_is_a_total_of_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_TIMEOUT", raising=False)
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", str(int(TIMEOUT * 1000)))
    with _hub("stdio-lists") as hub:
        hub.tools()  # connected, tools listed
        ends_in_time(lambda: hub.call_tool("mcp__bad__echo", {}), r"tools/call")


def test_a_callers_short_deadline_puts_no_server_in_cool_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connect cut short by the caller's deadline (not the configured total) does not mark
    the server failed: the next use, with time enough, connects."""
    monkeypatch.delenv("MCP_TIMEOUT", raising=False)
    with _hub("stdio-lists") as hub:
        # 5 ms: this peer connects in about 17 ms on an idle machine (20 ms was sometimes
        # enough, and the call then failed at tools/call instead)
        ends_in_time(lambda: hub.call_tool("mcp__bad__echo", {}, timeout=0.005), r"^connecting")
        assert hub.status()["bad"].state == "pending"
        assert [t.name for t in hub.tools(timeout=10)] == ["mcp__bad__echo"]


def test_the_hostile_peer_answers_the_handshake_as_documented() -> None:
    """The peers themselves: ``mute`` really is connected (on each era) before it goes quiet."""
    for era in ("handshake", "stateless"):
        with connect(stdio_target("mute", era), timeout=10) as client:
            assert client.session.era == era
