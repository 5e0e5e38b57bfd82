"""The ``Client`` class (its options, lifecycle and public calls: tasks, resources, skills,
prompts, completion, roots, logging) and ``connect()``, on top of the tool calls (``_tools``),
the call paths (``_calls``), the kept connection (``_connecting``) and era negotiation
(``_negotiate``); how they work together: ``docs/explanation/inside-the-connection.md``."""

from __future__ import annotations

import inspect
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .. import events as _events
from .. import tasks as _tasks
from .._connection import LOAD_STATS_KEYS, Connection, Handlers
from .._deadline import Deadline
from .._version import __version__
from ..errors import ConfigError, LocalProtocolError, UnknownOption
from ..protocol import caching as _cache
from ..protocol import versions as v
from ..protocol.extensions import check_extensions, declared
from ..protocol.session import SessionInfo
from ..tasks import Task, TaskReceiver, TaskStatus
from ._connecting import close_holder, live_clients, weak_observer
from ._listen_acks import ListenAcks
from ._targets import target_name, validated_target
from ._tools import Tools

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._http.retry import Retry
    from .._options import ConnectOptions
    from ..protocol.types import (
        CompleteResult,
        GetPromptResult,
        Implementation,
        Params,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
    )
    from ..server import Server
    from ..skills import LoadedSkill, Skill

__all__ = ["Client", "connect"]

DEFAULT_TIMEOUT = 60.0
DEFAULT_DISCOVER_TIMEOUT = 5.0
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def connect(
    target: Any, *, timeout: float = DEFAULT_TIMEOUT, **options: Unpack[ConnectOptions]
) -> Client:
    """Connect to one MCP server and return a ready ``Client``.

    Takes the same ``target`` and keyword options as ``Client``: see ``help(Client)``,
    whose "Args" list every option (``timeout``, ``protocol_version``, ``env``, ``cwd``,
    ``headers``, ``auth``, the handlers...). The options are typed
    (``mcp_lite._options.ConnectOptions``): a type checker flags a misspelt option, a wrong
    type or a handler with the wrong signature; at run time a misspelt one raises
    ``UnknownOption`` ("connect() got an unknown option 'timout' (did you mean
    'timeout'?)") before anything starts.

    Raises:
        ConnectError: the server could not be started or reached; ``ServerExitedAtStart``
            (also a ``ConnectionClosed``: exit code, stderr tail) when it went away during
            the handshake.
        UnsupportedProtocolVersion: no protocol version both sides speak.
        ConfigError: the target or an option is invalid (``UnknownOption``, also a
            ``TypeError``, for an option that does not exist).
    """
    if options:
        _check_options("connect", options)
    client = Client(target, timeout=timeout, **options)
    try:
        client.open()
    except BaseException:
        client.close()
        raise
    return client


class Client(Tools):
    """A connection to one MCP server. Thread-safe; fork-safe; ``close()`` is idempotent.

    Args:
        target: a command (``["python", "srv.py"]``, or one string split like a shell
            would), a config dict (``{"command": ..., "args": [...], "env": {...}}``), a URL
            (``http(s)://``, ``ws(s)://``), or a ``mcp_lite.Server`` for an in-process server.
        timeout: seconds, a finite default for each operation; always a total: ``connect``
            (start, probe, handshake) as a whole, a list over all its pages, a call with its
            retries, reconnect and input rounds. Every call may pass its own.
        protocol_version: ``"auto"`` (probe for 2026-07-28, fall back to the handshake
            era), or one version to pin.
        client_info: ``{"name", "version"}`` sent to the server.
        env: extra environment variables of a stdio server (added to a safe allow-list).
        cwd: the working folder of a stdio server.
        max_message_size: largest message accepted from the server, in bytes.
        sampling_handler: ``fn(params)`` answering ``sampling/createMessage``.
        elicitation_handler: ``fn(params)`` answering ``elicitation/create``.
        roots: the roots to offer (paths or ``file://`` URIs, or ``{"uri", "name"}``).
        roots_handler: ``fn()`` returning the roots, asked each time instead of ``roots``.
        log_handler: ``fn(params)`` for each ``notifications/message``.
        notification_handler: ``fn(method, params)`` for any other notification.
        reset_timeout_on_progress: a progress notification restarts a call's timeout, up to
            ``max_total_timeout`` seconds in all.
        max_total_timeout: the cap of a call whose timeout progress may restart.
        auto_reconnect: start a new connection on the next call after the server died.
        discover_timeout: how long the 2026-07-28 probe waits before assuming an older server
            (a cap inside the connect's timeout, never extra time: at most half of what is
            left, so the handshake that may follow has the other half).
        max_pages: the most pages a list method follows.
        max_workers: threads that run handlers and server requests.
        cache_results: honour 2026-07-28 ``ttlMs`` on list results and resource reads.
        name: used in logs and error messages.
        headers: static HTTP headers of a remote server.
        auth: a bearer token, or a ``mcp_lite.auth.OAuth`` provider, for a remote server.
        event_hooks: ``{"request"|"response"|"notification"|"reconnect"|"error": [fn]}``,
            each ``fn(event)`` called with a ``mcp_lite.events.Event``.
        task_receiver: declare the 2025-11-25 ``tasks`` capability and run the server's
            task-augmented sampling / elicitation requests as tasks (with the handlers above).
        retry: HTTP transient errors: ``mcp_lite.Retry(...)``, or False to never retry
            (default ``Retry()``: 429/503 with Retry-After, and 5xx on read-only methods).
        extensions: ``{id: settings}``, extensions to declare besides mcp_lite's own
            (tasks, skills), in both eras; the settings are sent as given (an id given here
            replaces mcp_lite's settings for it). A config dict's ``"extensions"`` is laid
            over these. Declare ``io.modelcontextprotocol/ui`` only if you render apps.

    Handlers run on worker threads, never on the reader; each gets the request's params as a
    model (attribute access, unknown fields kept) and may return a model or a plain dict.

    A misspelt option raises Python's own ``TypeError`` here ("unexpected keyword
    argument"); ``connect()`` checks its options first and names the closest one
    (``UnknownOption``, a ``TypeError`` too), so ``Client()`` itself pays for no check.
    """

    def __init__(
        self,
        target: Any,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        protocol_version: str = "auto",
        client_info: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        max_message_size: int | None = None,
        sampling_handler: Callable[[Params], Any] | None = None,
        elicitation_handler: Callable[[Params], Any] | None = None,
        roots: Iterable[str | Mapping[str, Any]] | None = None,
        roots_handler: Callable[[], Any] | None = None,
        log_handler: Callable[[Params], Any] | None = None,
        notification_handler: Callable[[str, Params], Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        auto_reconnect: bool = True,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
        max_pages: int = 1000,
        max_workers: int = 4,
        cache_results: bool = True,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        event_hooks: Mapping[str, Any] | None = None,
        task_receiver: bool = False,
        retry: bool | Retry | Mapping[str, Any] | None = None,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if timeout is None or timeout <= 0:
            raise ConfigError("timeout must be a positive number of seconds")
        if protocol_version != "auto" and protocol_version not in v.SUPPORTED_VERSIONS:
            raise ConfigError(
                f"protocol_version {protocol_version!r} is not one of "
                f"'auto', {', '.join(v.SUPPORTED_VERSIONS)}"
            )
        if isinstance(target, Mapping):
            raw, target = target, validated_target(target)
            # A config dict's own settings apply: its name, its timeout (unless one was
            # given here), and "disabled" (refused rather than silently ignored).
            if raw.get("disabled") is True:
                raise ConfigError('this server config says "disabled": true')
            if name is None and isinstance(raw.get("name"), str) and raw["name"]:
                name = raw["name"]
            if timeout == DEFAULT_TIMEOUT and isinstance(raw.get("timeout"), (int, float)):
                timeout = float(raw["timeout"])
            if raw.get("extensions") is not None:
                entry = check_extensions(raw["extensions"], "the config's extensions")
                extensions = {**check_extensions(extensions), **entry}
        self.target = target
        self.timeout = float(timeout)
        self.name = name or target_name(target)
        self._last_session: SessionInfo | None = None
        self._protocol_version = protocol_version
        self._transport_options = {
            "env": env,
            "cwd": cwd,
            "max_message_size": max_message_size,
            "headers": headers,
            "auth": auth,
            "retry": None if retry is None else _as_retry(retry),
        }
        self._handlers = Handlers(
            client_info=dict(client_info or {"name": "mcp-lite", "version": __version__}),
            sampling=sampling_handler,
            elicitation=elicitation_handler,
            roots=[_root(r) for r in roots] if roots is not None else None,
            roots_handler=roots_handler,
            log_handler=log_handler,
            notification_handler=notification_handler,
            task_receiver=TaskReceiver() if task_receiver else None,
            extensions=check_extensions(extensions),
        )
        self.reset_timeout_on_progress = reset_timeout_on_progress
        self.max_total_timeout = max_total_timeout
        self.auto_reconnect = auto_reconnect
        # 2026-07-28: re-issue a request whose answer stream broke (off through a gateway,
        # where the request may have run: see hub._gateway_route.own_outcomes)
        self._reissue_broken = True
        self.discover_timeout = discover_timeout
        self.max_pages = max_pages
        self._max_workers = max_workers
        self._event_hooks = _events.normalize_hooks(event_hooks)
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._closed = False
        self._closed_why: str | None = None  # what close() was told, for later calls' errors
        self._connects = 0  # connections made so far: a task notes it (see tasks.py)
        self._subscriptions: set[str] = set()
        self._listen_future: Future[dict[str, Any]] | None = None
        self._listen_acks = ListenAcks()  # 2026-07-28: a stream is open once acknowledged
        self._output_schemas: dict[str, dict[str, Any]] = {}
        self._skill_entries: dict[str, Skill] = {}  # uri -> entry last listed (bounded)
        self._task_support: dict[str, str] | None = None  # tool -> execution.taskSupport
        # Told of each task handle made here: a Hub that owns this client holds its server
        # while the task may still be collected, however the task was started.
        self._on_task: Callable[[Task], None] | None = None
        self.cache_results = cache_results
        self._results = _cache.ResultCache()
        self._results_lock = threading.Lock()
        self._handlers.observer = weak_observer(self)
        self._era_hint: str | None = None  # "handshake" or "stateless", found at the last connect
        holder: list[Connection | None] = [None]
        self._conn_holder = holder
        self._finalizer = weakref.finalize(self, close_holder, holder)
        live_clients.add(self)

    # --- lifecycle -------------------------------------------------------------------------------

    def open(self, *, timeout: float | None = None) -> Client:
        """Connect now (``connect()`` does this for you). Returns self.

        ``timeout`` (default: the client's) bounds the whole connect: starting the server,
        the discover probe, ``initialize`` and ``notifications/initialized``."""
        return self._connect_by(Deadline.after(self._timeout(timeout)))

    def _connect_by(self, deadline: Deadline) -> Client:
        """``open()`` on the caller's deadline (the Hub's first use of a server)."""
        self._connection(deadline)
        return self

    def close(self, reason: str | None = None) -> None:
        """Close the connection and stop the server process; idempotent, bounded (~1 s).

        ``reason``: why, for the errors of calls still pending and of any later call on
        this client (e.g. the Hub's "recycled ..."); the first close's reason stays."""
        with self._lock:
            if not self._closed:
                self._closed_why = reason
            self._closed = True
            conn, self._conn = self._conn, None
            self._conn_holder[0] = None
        if conn is not None:
            if conn.info is not None:
                self._last_session = conn.info
            if reason is None:
                conn.close()
            else:
                conn.close(f"the client for {self.name!r} was closed: {reason}")
        self._finalizer.detach()

    def __enter__(self) -> Client:
        return self.open() if self._conn is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("connected" if self._conn else "idle")
        return f"<mcp_lite.Client {self.name!r} {state}>"

    def load_stats(self) -> dict[str, int]:
        """How the current connection sheds a flooding server (no I/O): notifications queued
        and dropped, server requests queued and refused, control messages dropped. Zeros
        when not connected. See README, "Guarantees, precisely"."""
        conn = self._conn
        return conn.load_stats() if conn is not None else dict.fromkeys(LOAD_STATS_KEYS, 0)

    # How a Hub that lent this client out (``hub.client()``) sees the calls made on it
    # directly, which hold no lease (see ``hub._recycle``). No I/O.

    def _use_mark(self) -> tuple[int, int] | None:
        """A mark that moves with every request sent (on this connection or a new one)."""
        conn = self._conn
        return None if conn is None else (id(conn), conn.requests_sent)

    def _in_flight(self) -> int:
        conn = self._conn
        return 0 if conn is None else conn.in_flight()

    @property
    def server_info(self) -> Implementation:
        from ..protocol.types import Implementation

        return Implementation.model_validate(self.session.server_info)

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.session.capabilities

    @property
    def server_extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions the server declared, ``{id: settings}`` as it sent them (``{}``
        when none), whichever the era. A feature built on an extension the server did not
        declare is not used."""
        return declared(self.session.capabilities)

    @property
    def protocol_version(self) -> str:
        return self.session.protocol_version

    @property
    def instructions(self) -> str | None:
        return self.session.instructions

    # --- tasks -------------------------------------------------------------------------------------

    def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        timeout: float | None = None,
    ) -> Task:
        """Start a tool call as a task and return its handle at once: ``task.status()``,
        ``task.result(timeout=)``, ``task.cancel()``.

        2025-11-25 servers that declare ``tasks.requests.tools.call``: ``params.task``
        (``ttl`` in ms). 2026-07-28 servers with the tasks extension decide themselves; an
        answer that is not a task gives a handle that is already complete.

        Raises:
            LocalProtocolError: the server supports no tasks.
        """
        return self._start_task(Deadline.after(self._timeout(timeout)), name, arguments, ttl)

    def _start_task(
        self, deadline: Deadline, name: str, arguments: Mapping[str, Any] | None, ttl: int | None
    ) -> Task:
        """``call_tool_as_task`` on the caller's deadline (``Hub.call_tool_as_task``)."""
        return self._told(_tasks.start_task(self, name, arguments, ttl, deadline))

    def resume_task(self, task_id: str, *, timeout: float | None = None) -> Task:
        """The handle of a task started earlier, perhaps by another process that stored
        ``task.id``: ``status()``, ``result(timeout=)``, ``cancel()`` as for
        ``call_tool_as_task``. One ``tasks/get`` (within ``timeout``, connecting included)
        confirms the task and fills ``last_status``; ``task.tool`` is ``""`` (the server
        does not say).

        Works where the server keeps its tasks across connections: an HTTP server (or one
        behind the gateway). A stdio server this client starts is a new process that knows
        none of an earlier process's tasks.

        Raises:
            InvalidParams: the server does not know ``task_id`` (the message says why it may
                not, and that a stdio server cannot resume tasks).
            LocalProtocolError: the server supports no tasks.
        """
        return self._resume_task(Deadline.after(self._timeout(timeout)), task_id)

    def _resume_task(self, deadline: Deadline, task_id: str) -> Task:
        """``resume_task`` on the caller's deadline (``Hub.resume_task`` passes its own)."""
        self._session(deadline)
        transport = self.transport
        stdio = transport is not None and transport.pid is not None  # a process we started
        return self._told(_tasks.resume_task(self, task_id, deadline, stdio=stdio))

    def _told(self, task: Task) -> Task:
        on_task = self._on_task
        if on_task is not None:
            on_task(task)
        return task

    def list_tasks(self, *, timeout: float | None = None) -> list[TaskStatus]:
        """The server's tasks for this session (2025-11-25 ``tasks/list``, every page).

        Raises:
            LocalProtocolError: the server does not list tasks (2026-07-28 has no tasks/list).
        """
        return _tasks.list_tasks(self, Deadline.after(self._timeout(timeout)))

    # --- resources ---------------------------------------------------------------------------------

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        return self._list_resources(Deadline.after(self._timeout(timeout)))

    def _list_resources(self, deadline: Deadline) -> list[Resource]:
        items = self._list_all("resources/list", "resources", "resources", deadline)
        from ..protocol.types import Resource

        return [Resource.model_validate(item) for item in items]

    def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        items = self._list_all(
            "resources/templates/list",
            "resourceTemplates",
            "resources",
            Deadline.after(self._timeout(timeout)),
        )
        from ..protocol.types import ResourceTemplate

        return [ResourceTemplate.model_validate(item) for item in items]

    def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        return self._read_resource(Deadline.after(self._timeout(timeout)), uri)

    def _read_resource(self, deadline: Deadline, uri: str) -> ReadResourceResult:
        from ..protocol.types import ReadResourceResult

        return ReadResourceResult.model_validate(
            self._request(deadline, "resources/read", {"uri": uri})
        )

    # --- skills (extension io.modelcontextprotocol/skills) -------------------------------------------

    def list_skills(self, *, timeout: float | None = None) -> list[Skill]:
        """The skills the server publishes (``skills/list``, every page). Reads no file.

        Raises:
            LocalProtocolError: the server does not declare the skills extension.
        """
        return self._list_skills(Deadline.after(self._timeout(timeout)))

    def _list_skills(self, deadline: Deadline) -> list[Skill]:
        from .. import skills

        found = skills.list_skills(self, deadline)
        self._remember_skills(found)
        return found

    def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill:
        """One skill's entry by its ``SKILL.md`` URI (``skills/get``), listed or not."""
        return self._get_skill(Deadline.after(self._timeout(timeout)), uri)

    def _get_skill(self, deadline: Deadline, uri: str) -> Skill:
        from .. import skills

        skill = skills.get_skill(self, uri, deadline)
        self._remember_skills([skill])
        return skill

    def load_skill(self, skill: str | Skill, *, timeout: float | None = None) -> LoadedSkill:
        """Read a skill's ``SKILL.md`` and verify it (size, digest, frontmatter) against
        its entry (from ``list_skills``, else ``skills/get``). Its other files are read
        only on ``LoadedSkill.read(path)``, each verified too.

        Raises:
            SkillVerificationError: the content does not match the entry; nothing is used.
        """
        return self._load_skill(Deadline.after(self._timeout(timeout)), skill)

    def _load_skill(self, deadline: Deadline, skill: str | Skill) -> LoadedSkill:
        """``load_skill`` on one deadline: the entry's lookup and the read share it."""
        from .. import skills

        if isinstance(skill, str):
            with self._lock:
                known = self._skill_entries.get(skill)
            skill = known if known is not None else self._get_skill(deadline, skill)
        return skills.load_skill(self, skill, deadline)

    def _remember_skills(self, found: list[Skill]) -> None:
        with self._lock:
            for item in found:
                self._skill_entries.pop(item.uri, None)
                self._skill_entries[item.uri] = item
            while len(self._skill_entries) > 10_000:
                self._skill_entries.pop(next(iter(self._skill_entries)))

    def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (to ``notification_handler``).

        2026-07-28 servers get one ``subscriptions/listen`` stream covering every subscribed
        URI and the list-changed notifications; it is re-opened after a reconnect.
        """
        deadline = Deadline.after(self._timeout(timeout))  # the connect and the request
        with self._lock:
            self._subscriptions.add(uri)
        info = self._session(deadline)
        if info.era == "stateless":
            self._listen(deadline)
        else:
            self._require(info, "resources", "subscribe", "resources/subscribe")
            self._request(deadline, "resources/subscribe", {"uri": uri})

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        deadline = Deadline.after(self._timeout(timeout))
        with self._lock:
            self._subscriptions.discard(uri)
        if self._session(deadline).era == "stateless":
            self._listen(deadline)
        else:
            self._request(deadline, "resources/unsubscribe", {"uri": uri})

    # --- prompts, completion, logging, ping --------------------------------------------------------

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        return self._list_prompts(Deadline.after(self._timeout(timeout)))

    def _list_prompts(self, deadline: Deadline) -> list[Prompt]:
        items = self._list_all("prompts/list", "prompts", "prompts", deadline)
        from ..protocol.types import Prompt

        return [Prompt.model_validate(item) for item in items]

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        return self._get_prompt(Deadline.after(self._timeout(timeout)), name, arguments)

    def _get_prompt(
        self, deadline: Deadline, name: str, arguments: Mapping[str, str] | None
    ) -> GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {str(k): str(val) for k, val in arguments.items()}
        from ..protocol.types import GetPromptResult

        return GetPromptResult.model_validate(self._request(deadline, "prompts/get", params))

    def complete(
        self,
        ref: Mapping[str, Any],
        argument_name: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult:
        """``completion/complete``; ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``."""
        params: dict[str, Any] = {
            "ref": dict(ref),
            "argument": {"name": argument_name, "value": value},
        }
        if context:
            params["context"] = {"arguments": dict(context)}
        from ..protocol.types import CompleteResult

        return CompleteResult.model_validate(
            self.request("completion/complete", params, timeout=timeout)
        )

    def set_roots(self, roots: Iterable[str | Mapping[str, Any]]) -> None:
        """Replace the roots offered to the server (paths or ``file://`` URIs, or
        ``{"uri", "name"}``) and send ``notifications/roots/list_changed`` so it asks again.

        The list replaces any ``roots_handler``. A client made without roots declares the
        roots capability from its next connection on (the protocol allows the notification
        only after the capability was declared); on 2026-07-28 there is no session to
        notify: the server gets the new list the next time it asks.
        """
        new = [_root(r) for r in roots]
        handlers = self._handlers
        declared = handlers.roots is not None or handlers.roots_handler is not None
        handlers.roots, handlers.roots_handler = new, None
        with self._lock:
            conn = self._conn
        if conn is None or not declared or conn.info is None:
            return
        if conn.info.era == "handshake":
            conn.notify("notifications/roots/list_changed")

    def set_log_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server for log messages at ``level`` and above (to ``log_handler``)."""
        if level not in LOG_LEVELS:
            raise ConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}")
        deadline = Deadline.after(self._timeout(timeout))  # the connect and the request
        info = self._session(deadline)
        self._handlers.log_level = level
        if info.era == "handshake":
            self._require(info, "logging", None, "logging/setLevel")
            self._request(deadline, "logging/setLevel", {"level": level})

    def ping(self, *, timeout: float | None = None) -> None:
        """Round-trip to the server: ``ping``, or on 2026-07-28 (which removed ping) a
        ``server/discover``, never answered from the result cache. A health check that works
        whatever the server's era."""
        deadline = Deadline.after(self._timeout(timeout))
        conn = self._connection(deadline)
        if conn.info is not None and conn.info.era == "stateless":
            self._request_once(conn, deadline, "server/discover", {}, None)
            return
        self._request(deadline, "ping", None)

    # --- internals -----------------------------------------------------------------------------------

    def _require(self, info: SessionInfo, capability: str, sub: str | None, method: str) -> None:
        if not info.has_capability(capability, sub):
            what = f"{capability}.{sub}" if sub else capability
            raise LocalProtocolError(
                f"MCP server {self.name!r} did not declare the {what!r} capability "
                f"needed for {method}"
            )


# --- helpers ---------------------------------------------------------------------------------------


_option_names: frozenset[str] | None = None


def _check_options(function: str, options: Mapping[str, Any]) -> None:
    """Raise ``UnknownOption`` for an option ``Client`` does not take, with the closest
    known name (its keyword parameters, read once)."""
    global _option_names
    if _option_names is None:
        params = inspect.signature(Client.__init__).parameters.values()
        _option_names = frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY)
    for option in options:
        if option not in _option_names:
            import difflib  # only on this failure path: it is not loaded otherwise

            close = difflib.get_close_matches(option, sorted(_option_names), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOption(
                f"{function}() got an unknown option {option!r}{hint}; "
                "help(mcp_lite.Client) lists every option"
            )


def _as_retry(retry: bool | Retry | Mapping[str, Any]) -> Retry:
    # HTTP only: imported here, since its date parsing (email.utils) costs a stdio client
    # ~8 ms at start-up
    from .._http.retry import as_retry

    return as_retry(retry)


def _root(root: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(root, str):
        return {"uri": root if "://" in root else f"file://{os.path.abspath(root)}"}
    return dict(root)


if TYPE_CHECKING:
    _Server = Server
