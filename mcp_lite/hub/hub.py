"""``Hub``: every configured MCP server at once, the way an agent host uses them; a thin
front over the configuration (``config``), the runtime (``_runtime``: slots, connections,
recycling), what the model sees (``_for_model``) and the lookups (``_lookup``). Thread-safe
and fork-safe; how it works: ``docs/explanation/inside-the-hub.md``."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._deadline import Deadline
from .._text import plural
from ..errors import (
    AuthRequired,
    ConfigError,
    ConnectionClosed,
    InvalidRequest,
    McpError,
    RpcError,
    SessionExpired,
    TransportError,
    UrlElicitationRequired,
)
from ..protocol.extensions import check_extensions, declared
from ..protocol.tool_specs import for_model
from ..transports._headers_helper import helper_refused
from ._ambient_deadline import _current, _deadline, _within
from ._for_model.permissions import PermissionHandler, Permissions, parse_rule
from ._for_model.results import ResultProcessor, ToolEvent, check_media
from ._for_model.search import rank_tools
from ._for_model.tools import (
    Catalog,
    McpPrompt,
    McpResource,
    McpTool,
    ToolFormat,
    ToolSpec,
)
from ._lookup import OWN_TOOLS as _OWN_TOOLS
from ._own_calls import OwnTools
from ._runtime.auth_cache import AuthCache, NeedsAuthCache
from ._runtime.callbacks import SamplingHandler
from ._runtime.connections import Connections, capped
from ._runtime.elicitation import Elicitation, ElicitationHook
from ._runtime.gateway_route import GatewayRoute, gateway_of
from ._runtime.server_status import Backoff, ServerStatus
from ._runtime.spec import Spec
from ._runtime.submit import Submitter
from .config import _setup
from .config.policy import ServerPolicy, add_allow_rule

if TYPE_CHECKING:
    from concurrent.futures import Future

    from typing_extensions import Unpack

    from .._options import ClientOptions
    from ..client import Client
    from ..protocol.types import CallToolResult, GetPromptResult, Progress, ReadResourceResult
    from ..skills import LoadedSkill, Skill
    from ..tasks import Task
    from ._options import FromConfigOptions

__all__ = ["Backoff", "Hub", "ServerSnapshot", "ServerStatus", "ToolEvent"]

log = logging.getLogger("mcp_lite.hub")
_T = TypeVar("_T")

MAX_URL_ELICITATION_ROUNDS = 3


@dataclass(frozen=True)
class ServerSnapshot:
    """What ``Hub.reconnect`` returns: the server's new status and fresh lists."""

    status: ServerStatus
    tools: list[McpTool] = field(default_factory=list)
    resources: list[McpResource] = field(default_factory=list)
    prompts: list[McpPrompt] = field(default_factory=list)


class Hub(OwnTools):
    """Many MCP servers behind one object (DESIGN §6).

    Args:
        config: a ``HubConfig`` (from ``load_config``), or a mapping like a ``.mcp.json``
            (``{"mcpServers": {name: entry}}``) whose entries may also be ``mcp_lite.Server``
            objects (in-process servers).
        allow, deny: permission rules, ``mcp__server`` or ``mcp__server__tool``; deny wins.
        permission_handler: ``fn(tool: McpTool, arguments) -> bool`` for calls no rule
            decides (tools of in-process servers are always allowed); answering
            ``"always"`` allows the tool from then on and, for a Hub made by
            ``from_config``, saves ``permissions.allow`` in ``.claude/settings.local.json``.
            The Hub's own tools that reach a server (listing and reading resources) ask it
            too: ``tool.name`` is then the bare own-tool name (``"ReadMcpResourceTool"``,
            ``"ListMcpResourcesTool"``; a server's tool is always ``mcp__...``),
            ``tool.server`` the server reached and ``arguments`` ``{"server", "uri"}``
            (``uri`` only for a read); of the rules, only those naming a whole server apply.
            A refusal raises ``PermissionDenied`` from ``call_tool`` as for MCP tools; a
            listing of every server leaves out (and names) the servers refused.
            The rules of every settings file (``permissions.allow``/``deny``) are merged
            with ``allow`` and ``deny``.
        default_permission: ``"allow"`` or ``"deny"``: the decision without a handler.
        elicitation_hooks: ``fn(server, params) -> result | None``, tried in order before
            ``elicitation_handler(server, params)``; with neither, elicitations are cancelled.
        sampling_handler: ``fn(server, params) -> result`` for every server's
            ``sampling/createMessage``, told which server asks (as ``elicitation_handler``
            is), so a host can apply per-server policy. A ``sampling_handler`` in
            ``client_options`` is still called as ``fn(params)``, without the server; giving
            both is a ``ConfigError``.
        output_dir: where images, audio and blobs from tool results are written (default: a
            private temporary folder, created on first use and kept).
        media: ``"files"`` (default): image and audio blocks are written to ``output_dir``
            and replaced by a note giving the path; ``"inline"``: they stay in the result
            as blocks (for a multimodal model), under the same caps (an image over
            ``MAX_IMAGE_PIXELS`` dropped with a note, shrunk to 2000 px when Pillow is
            installed; at most ``max_output_file_bytes`` per call). Embedded blobs are
            always written to files. ``call_tool(media=...)`` chooses per call.
        max_output_tokens: text budget per result (default ``MAX_MCP_OUTPUT_TOKENS`` or 25,000);
            text or structured content over it is cut for the model and kept in full in a
            file of ``output_dir`` (0600 files in a 0700 folder), the result saying where.
        max_output_file_bytes: the most bytes written to ``output_dir`` per call (default
            64 MiB); what does not fit is dropped with a note.
        client_options: passed to every ``Client`` (``timeout=``, ``sampling_handler=``...),
            and ``connect_timeout=`` seconds for starting a server and its handshake
            (default: ``MCP_TIMEOUT`` milliseconds when set, else ``timeout``). Tool calls
            without a ``timeout`` use ``MCP_TOOL_TIMEOUT`` milliseconds when set (unless
            the server's config has its own ``timeout``).
        backoff: the reconnect policy (``Backoff(base=1.0, max_attempts=3, ...)``).
        auth_cache_path: the needs-auth cache file (default ``~/.cache/mcp-lite/needs-auth.json``).
        auth_cache: a needs-auth cache object instead of the file, e.g.
            ``RedisTokenStore(...).needs_auth_cache()`` shared by every worker of a fleet.
        elicitation_timeout: seconds a call waits for a URL elicitation to complete before
            retrying.
        event_hooks: ``{kind: [fn]}`` given to every Client (``mcp_lite.events``); each
            ``Event.server`` names the server; ``reconnect`` also fires when the Hub replaces
            a dead connection.
        always_load: rules (``mcp__server``, ``mcp__server__tool``) naming tools that
            ``tool_definitions(deferred=True)`` always offers, besides the tools whose
            ``_meta["anthropic/alwaysLoad"]`` is true and the servers configured with
            ``"alwaysLoad": true`` (or a list of tool names).
        allowed_servers, denied_servers: server policy entries (``{"serverName": ...}``,
            ``{"serverCommand": [...]}``, ``{"serverUrl": "https://*.corp/*"}``), applied
            with the managed ``allowedMcpServers`` / ``deniedMcpServers`` (see ``policy``):
            deny wins, an allow list admits only what it matches, in-process servers are
            exempt; a blocked server is ``disabled`` and never starts.
        idle_timeout: seconds after which a stdio server nobody used is stopped (state
            ``idle``); the next call starts it again within its own deadline. None: never.
        max_lifetime: seconds after which a stdio server is restarted, between calls: one
            with calls in flight is stopped when the last ends, new calls start the new
            process; a recycle never fails a call. None: never. An entry's own
            ``"idleShutdown"`` / ``"maxLifetime"`` (seconds; 0: off) overrides either. A
            ``Client`` taken with ``hub.client()`` is not held: a recycle closes it
            between its calls, and a later call raises ``ConnectionClosed`` saying so (use
            the Hub's calls, or take ``hub.client()`` again).
        gateway: ``"unix:///path.sock"``: reach each configured server the gateway
            (``mcp-lite gateway``) has under the same name and fingerprint through it
            instead of running it here; others run locally. None: ``MCP_LITE_GATEWAY``
            when set; False: no gateway. ``status()`` tells the path (``via``).
        gateway_user: the user (name or uid) the gateway runs as, when it is not this
            process's user or root (None: ``MCP_LITE_GATEWAY_USER`` when set). Nothing is
            sent on a connection to the gateway's socket whose process runs as anyone else:
            ``ConnectError`` naming that user.
        extensions: ``{id: settings}`` declared to every server besides mcp_lite's own
            (see ``connect``); an entry's ``"extensions"`` is laid over these, and these
            over ``client_options["extensions"]``. Declare ``io.modelcontextprotocol/ui``
            only if the host renders apps (see ``app_call_tool``).

    Raises:
        ConfigError: a malformed permission rule or option.
    """

    def __init__(
        self,
        config: Any,
        *,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        permission_handler: PermissionHandler | None = None,
        default_permission: Literal["allow", "deny"] = "allow",
        elicitation_hooks: Iterable[ElicitationHook] = (),
        elicitation_handler: ElicitationHook | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        media: Literal["files", "inline"] = "files",
        max_output_tokens: int | None = None,
        client_options: ClientOptions | None = None,
        backoff: Backoff | None = None,
        auth_cache_path: str | os.PathLike[str] | None = None,
        elicitation_timeout: float = 120.0,
        event_hooks: Mapping[str, Any] | None = None,
        always_load: Iterable[str] = (),
        auth_cache: AuthCache | None = None,
        allowed_servers: Iterable[Mapping[str, Any]] | None = None,
        denied_servers: Iterable[Mapping[str, Any]] | None = None,
        max_output_file_bytes: int | None = None,
        sampling_handler: SamplingHandler | None = None,
        idle_timeout: float | None = None,
        max_lifetime: float | None = None,
        gateway: str | bool | None = None,
        gateway_user: str | int | None = None,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._permissions = Permissions(allow, deny, permission_handler, default_permission)
        self._rules = (self._permissions.allow, self._permissions.deny)
        self._granted: list[str] = []
        self._local_settings: Any = None
        self._policy = ServerPolicy(
            None if allowed_servers is None else list(allowed_servers),
            None if denied_servers is None else list(denied_servers),
        )
        self._always_load = [parse_rule(r) for r in always_load]
        self._aliases: dict[str, tuple[str, str]] = {}
        self._search_format: ToolFormat = "anthropic"
        self._results = ResultProcessor(output_dir, max_output_tokens, max_output_file_bytes)
        self._media = check_media(media)
        self._elicitation = Elicitation(elicitation_hooks, elicitation_handler)
        self._elicitation_timeout = float(elicitation_timeout)
        self._catalog = Catalog()
        # The per-call lookups, built once: a qualified name's (server, tool part), valid
        # until the servers change (``update``), and per server the tools by qualified
        # name, built on one cached tool list (the tuple itself: a list fetched anew after
        # list_changed, a reconnect or a recycle is another tuple, so a stale index is
        # never used).
        self._resolved: dict[str, tuple[str, str]] = {}
        self._indexes: dict[str, tuple[tuple[McpTool, ...], dict[str, list[McpTool]]]] = {}
        self._load: Callable[[], Any] | None = None
        specs = self._adopt(config)
        options = dict(client_options or {})
        if extensions is not None or options.get("extensions") is not None:
            options["extensions"] = {
                **check_extensions(options.get("extensions"), "client_options['extensions']"),
                **check_extensions(extensions),
            }
        connect_timeout = _setup.env_seconds("MCP_TIMEOUT", os.environ)
        if connect_timeout is not None:
            options.setdefault("connect_timeout", connect_timeout)
        self._tool_timeout = _setup.env_seconds("MCP_TOOL_TIMEOUT", os.environ)
        self._conns = Connections(
            specs,
            client_options=_with_hooks(options, event_hooks),
            backoff=backoff or Backoff(),
            auth_cache=auth_cache if auth_cache is not None else NeedsAuthCache(auth_cache_path),
            catalog=self._catalog,
            elicitation=self._elicitation,
            sampling_handler=sampling_handler,
            idle_timeout=idle_timeout,
            max_lifetime=max_lifetime,
            route=_route_of(gateway, gateway_user),
        )
        self._close_lock = threading.Lock()
        self._submitter = Submitter()

    @classmethod
    def from_config(
        cls,
        project_dir: str | os.PathLike[str] = ".",
        trust_project: bool | Iterable[str] = False,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        permission_handler: PermissionHandler | None = None,
        **typed_options: Unpack[FromConfigOptions],
    ) -> Hub:
        """A Hub on the config files of ``project_dir`` (see ``config.load_config``).

        ``options`` holds the Hub's keyword arguments (``output_dir=``, ``backoff=``...) and
        ``load_config``'s (``user_dir=``, ``config_files=``, ``dynamic=``...).
        """
        from .config import load_config

        options: dict[str, Any] = dict(typed_options)
        hub_options = {k: options.pop(k) for k in list(options) if k in _setup.HUB_OPTIONS}

        def load() -> Any:
            return load_config(project_dir, trust_project=trust_project, **options)

        hub = cls(
            load(), allow=allow, deny=deny, permission_handler=permission_handler, **hub_options
        )
        hub._load = load
        return hub

    # --- configuration -------------------------------------------------------------------------

    def update(self, config: Any) -> None:
        """Adopt a new configuration: servers whose entry did not change keep their
        connection; changed and removed ones are closed."""
        self._conns.update(self._adopt(config))
        self._resolved = {}
        self._indexes = {}

    def _adopt(self, config: Any) -> list[Spec]:
        """The specs of ``config`` with the server policy applied; the permission rules of
        its settings files merged with the constructor's."""
        specs, self.issues = _setup.specs_of(config)
        self._config_always_load = _setup.always_load_of(config)
        allow, deny = self._rules
        old = self._permissions
        self._permissions = Permissions(
            [*allow, *getattr(config, "allow_rules", ()), *self._granted],
            [*deny, *getattr(config, "deny_rules", ())],
            old.handler,
            old.default,
            on_always=self._always_allow,
            own_granted=old.own_granted,
        )
        self._local_settings = getattr(config, "local_settings", None)
        return _setup.police(specs, [self._policy])

    def _always_allow(self, tool: McpTool) -> None:
        """The permission handler answered "always": allow this tool from now on, and save
        the rule to the project's ``.claude/settings.local.json`` (Hubs from config files)."""
        self._granted.append(tool.name)
        self._permissions.grant(tool.name)
        if self._local_settings is not None:
            try:
                add_allow_rule(self._local_settings, tool.name)
            except ConfigError as exc:
                log.warning("could not save the permission for %s: %s", tool.name, exc)

    def reload(self) -> None:
        """Read the config files again (``from_config`` Hubs) and ``update``."""
        if self._load is None:
            raise ConfigError("reload() needs a Hub made by Hub.from_config(); use update()")
        self.update(self._load())

    # --- servers -------------------------------------------------------------------------------

    def status(self) -> dict[str, ServerStatus]:
        """``{name: ServerStatus}`` for every configured server (no connection is made)."""
        return self._conns.status()

    def connect_all(self) -> dict[str, ServerStatus]:
        """Connect every enabled server now (3 local and 20 remote at a time); returns
        ``status()``. A server that fails is recorded as such, never raised."""
        self._conns.connect_all()
        return self.status()

    def client(self, name: str) -> Client:
        """The connected ``Client`` of server ``name`` (connecting when needed)."""
        return self._conns.client(name)

    def reconnect(self, name: str, *, timeout: float | None = None) -> ServerSnapshot:
        """Reconnect ``name`` now and return its status and fresh tools, resources, prompts.

        A failure is in the returned status (and its lists are empty), not raised.
        ``timeout``: for all of it (default: the configured connect and request totals).

        Raises:
            ConfigError: no server of that name is configured.
        """
        self._conns.spec(name)
        deadline = _deadline(timeout)
        try:
            self._conns.reconnect(name, deadline)
        except McpError as exc:
            log.info("reconnect of %r failed: %s", name, exc)
            return ServerSnapshot(self.status()[name])
        tools = for_model(self._server_list("tools", name, deadline))
        resources = self._server_list("resources", name, deadline)
        prompts = self._server_list("prompts", name, deadline)
        return ServerSnapshot(self.status()[name], tools, resources, prompts)

    def disable(self, name: str) -> None:
        """Close ``name``'s connection and stop using it until ``enable(name)``."""
        self._conns.disable(name)

    def enable(self, name: str) -> None:
        """Allow ``name`` again; it connects on next use."""
        self._conns.enable(name)

    # --- the pool ------------------------------------------------------------------------------

    def tools(self, *, timeout: float | None = None) -> list[McpTool]:
        """Every tool of every server that is up (connecting them in batches first), as the
        model may see them: a tool whose MCP Apps visibility (``_meta.ui.visibility``) leaves
        out ``"model"`` is never here, nor in anything built on this pool (see
        ``app_call_tool``; ``hub.client(server).list_tools()`` lists every tool).
        ``timeout``: for all of it; a server not up by then is left out (see ``status()``)."""
        return self._pool("tools", _deadline(timeout))

    def resources(self, *, timeout: float | None = None) -> list[McpResource]:
        """Every resource of every server that is up; each knows its ``server``.
        ``timeout``: as for ``tools()``."""
        return self._pool("resources", _deadline(timeout))

    def prompts(self, *, timeout: float | None = None) -> list[McpPrompt]:
        """Every prompt, as a command named ``mcp__<server>__<prompt>``.
        ``timeout``: as for ``tools()``."""
        return self._pool("prompts", _deadline(timeout))

    def skills(self, *, timeout: float | None = None) -> list[Skill]:
        """Every skill of every server that is up and declares the skills extension; each
        ``Skill`` knows its ``server``. No skill file is read (see ``load_skill``).
        ``timeout``: for all of it, as for ``tools()``."""
        from dataclasses import replace

        from ..skills import SKILLS_EXTENSION

        deadline = _deadline(timeout)
        self._conns.connect_all(deadline=deadline)
        out: list[Skill] = []
        for name, status in self._conns.status().items():
            if status.state not in ("connected", "pending", "idle"):
                continue
            try:
                with self._conns.lease(name, deadline) as client:
                    if SKILLS_EXTENSION not in declared(client.server_capabilities):
                        continue
                    found = (
                        client.list_skills() if deadline is None else client._list_skills(deadline)
                    )
                    out.extend(replace(skill, server=name) for skill in found)
            except ConnectionClosed:
                self._conns.connection_lost(name, client)
            except McpError as exc:
                log.warning("MCP server %r: could not list skills: %s", name, exc)
        return out

    def load_skill(self, skill: Skill, *, timeout: float | None = None) -> LoadedSkill:
        """Load (read and verify) a skill from ``skills()`` through its own server.
        ``timeout``: the total for connecting and reading."""
        if skill.server is None:
            raise ConfigError("this Skill does not name its server (take it from hub.skills())")
        deadline = _deadline(timeout)
        with self._conns.lease(skill.server, deadline) as client:
            if deadline is None:
                return client.load_skill(skill)
            return client._load_skill(deadline, skill)

    def tool_definitions(
        self,
        format: ToolFormat = "anthropic",
        *,
        deferred: bool = False,
        always_load: Iterable[str] = (),
        timeout: float | None = None,
    ) -> list[dict[str, Any]]:
        """The pool for an LLM API: ``"anthropic"`` (``name``, ``description``,
        ``input_schema``), ``"openai"`` (Chat Completions: ``{"type": "function",
        "function": {...}}``) or ``"openai-responses"`` (the Responses API: ``{"type":
        "function", "name", "description", "parameters"}``, flat).

        Every name is one an LLM API accepts (64 characters of ``[a-zA-Z0-9_-]`` at most,
        unique; longer ones shortened with a stable hash, see ``_llm_names``) and
        ``call_tool`` takes it back. Tools a deny rule refuses are left out. When a
        server has resources, ``ListMcpResourcesTool`` and ``ReadMcpResourceTool`` are added.

        ``deferred=True`` offers only the always-load tools (``_meta``, config, the Hub's
        ``always_load`` and this call's ``always_load`` rules) and a ``ToolSearch`` tool
        whose result (through ``call_tool``) carries the full definitions of the matches in
        ``structuredContent["tools"]``, for the host to add to the next turn.

        ``timeout``: for all of it, as for ``tools()``.

        Raises:
            ValueError: an unknown ``format``.
            ConfigError: a malformed ``always_load`` rule.
        """
        with _within(_deadline(timeout)):
            return self._definitions(format, deferred, always_load)

    def search_tools(self, query: str, limit: int = 10) -> list[McpTool]:
        """The tools matching ``query``, best first (name, title, description and the
        server's ``_meta["anthropic/searchHint"]``; see ``mcp_lite.hub._for_model.search``). Tools a
        deny rule refuses are never found. ``"select:a,b"`` picks tools by name."""
        tools = self._offered()
        names = self._llm_names(tools)
        aliases = {t.name: n for t, n in zip(tools, names, strict=True)}
        return rank_tools(tools, query, limit, aliases=aliases)

    def tool_specs(self, *, timeout: float | None = None) -> list[ToolSpec]:
        """Every tool the model is offered, as ``tool_definitions`` offers it (the same
        LLM-safe names, which ``call_tool`` takes back; tools a deny rule refuses left
        out), each with its server and ``McpTool`` (title, annotations, schemas). The Hub's
        own resource tools are not in it. ``timeout``: for all of it, as for ``tools()``."""
        with _within(_deadline(timeout)):
            tools = self._offered()
            names = self._llm_names(tools)
        return [ToolSpec(n, t.server, t) for t, n in zip(tools, names, strict=True)]

    # --- calls ---------------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_event: Callable[[ToolEvent], Any] | None = None,
        cancel_event: threading.Event | None = None,
        media: Literal["files", "inline"] | None = None,
    ) -> CallToolResult:
        """Call ``mcp__<server>__<tool>``: connect if needed, check permissions, call, and
        return the result with large text truncated and binary content saved to files
        (``media="inline"`` keeps image and audio blocks; None: the Hub's ``media``).

        ``cancel_event``: set it (from any thread) to abandon the call: the server is told
        (``notifications/cancelled``) and ``RequestCancelled`` is raised at once.

        ``on_event`` gets ``ToolEvent``s: ``started``, ``progress``…, ``completed`` or
        ``failed`` (with ``elapsed_ms``); without it the server is not asked for progress
        (no ``progressToken``, as for ``Client.call_tool`` without ``on_progress``). An expired session is re-opened and the call
        retried once; a URL elicitation the server requires is done, then the call retried.

        ``timeout`` bounds all of it: connecting the server on first use (every attempt
        and backoff wait), its tool list, the call and its retries. Without one, each step
        has its configured total: the connect ``MCP_TIMEOUT`` (else the client's timeout),
        the list the client's timeout, the call ``MCP_TOOL_TIMEOUT`` (else the server's or
        the client's timeout).

        Raises:
            PermissionDenied: a rule or the permission handler refused.
            ConfigError: no such server or tool.
            AuthRequired, ConnectError, ConnectionClosed, RequestTimeout, RpcError: as the
                server and connection dictate.
        """
        media = self._media if media is None else check_media(media)
        deadline = _deadline(timeout)
        if name in _OWN_TOOLS:
            with _within(deadline):
                return self._call_own(name, dict(arguments or {}))
        server, tool = self._tool_for(name, deadline)
        args = dict(arguments or {})
        spec = self._conns.spec(server)
        self._permissions.check(tool, args, in_process=spec.in_process)
        if on_event is None:  # nobody listens: no events, no progress asked for
            result = self._call(server, tool, args, deadline, None, cancel_event)
            return self._results.process(server, tool.tool_name, result, _meta_of(tool), media)
        emit = on_event

        def on_progress(p: Progress) -> None:
            emit(ToolEvent("progress", server, tool.name, p.progress, p.total, p.message))

        emit(ToolEvent("started", server, tool.name))
        start = time.monotonic()
        try:
            result = self._call(server, tool, args, deadline, on_progress, cancel_event)
            result = self._results.process(server, tool.tool_name, result, _meta_of(tool), media)
        except BaseException as exc:
            emit(ToolEvent("failed", server, tool.name, elapsed_ms=_ms(start), error=str(exc)))
            raise
        emit(ToolEvent("completed", server, tool.name, elapsed_ms=_ms(start)))
        return result

    def app_call_tool(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        """Call tool ``name`` of ``server`` on behalf of that server's MCP App (its ``ui://``
        view asked for it), under the permissions of the model's calls (rules, handler,
        default). ``name`` is the tool's name on its server (or its ``mcp__...`` name).

        Only the app's own server: a name of another server's tool is refused, as is a tool
        whose ``_meta.ui.visibility`` leaves out ``"app"``. The result is the server's, not
        truncated or saved to files (it goes to the app, not to the model). ``timeout`` as
        for ``call_tool``.

        Raises:
            PermissionDenied: another server's tool, a tool not visible to ``"app"``, or a
                rule or the permission handler refused.
            ConfigError: no such server or tool.
            AuthRequired, ConnectError, ConnectionClosed, RequestTimeout, RpcError: as for
                ``call_tool``.
        """
        deadline = _deadline(timeout)
        spec = self._conns.spec(server)  # ConfigError: no such server
        tool = self._app_tool(server, name, deadline)
        args = dict(arguments or {})
        self._permissions.check(tool, args, in_process=spec.in_process)
        return self._call(server, tool, args, deadline, None, cancel_event)

    def _call(
        self,
        server: str,
        tool: McpTool,
        args: dict[str, Any],
        deadline: Deadline | None,
        on_progress: Callable[[Progress], None] | None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        """The call on the caller's ``deadline`` (None: the call's configured total, see
        ``_call_total``), with one reconnect and retry after an expired session, on it too
        (through the gateway also after a refusal that ran nothing: see
        ``GatewayRoute.resendable``)."""
        for attempt in range(2):
            # The lease holds the server: a recycle waits for this call to end.
            with self._conns.lease(server, deadline) as client:
                within = Deadline.of(deadline, self._call_total(server, client))
                try:
                    return self._call_once(
                        client, server, tool, args, within, on_progress, cancel_event
                    )
                except (AuthRequired, TransportError, InvalidRequest) as exc:
                    if not attempt and self._headers_refused(server, exc):
                        # A new connection runs the server's headersHelper again.
                        self._conns.connection_lost(server, client)
                        log.info(
                            "MCP server %r refused its headers; re-running its headersHelper "
                            "and retrying %s once",
                            server,
                            tool.tool_name,
                        )
                        continue
                    if isinstance(exc, AuthRequired):
                        raise
                    if not self._conns.through_gateway(server):
                        if not isinstance(exc, ConnectionClosed):
                            raise
                        self._conns.connection_lost(server, client)
                        if attempt or not isinstance(exc, SessionExpired):
                            raise
                        log.info(
                            "MCP server %r: session expired; reconnecting and retrying %s once",
                            server,
                            tool.tool_name,
                        )
                        continue
                    phase = f"calling tool {tool.tool_name!r} of MCP server {server!r}"
                    error = self._conns.lost_through_gateway(server, client, exc, phase)
                    if error is not None or attempt:
                        raise (error or exc) from None
                    log.info("MCP server %r: the gateway restarted; retrying %s", server, phase)
                except RpcError as exc:  # through a gateway: the class its own failure had
                    route = self._conns.route
                    local = exc if route is None else route.local_error(exc)
                    if local is exc:
                        raise
                    raise local from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _call_total(self, server: str, client: Client) -> float | None:
        """A tool call's configured total: ``MCP_TOOL_TIMEOUT`` unless the server's entry
        has its own ``timeout``, else the client's (the entry's) timeout."""
        if self._tool_timeout is not None and self._conns.spec(server).timeout is None:
            return self._tool_timeout
        return client.timeout

    def _headers_refused(self, server: str, exc: McpError) -> bool:
        """A 401/403 from a server whose headers a headersHelper makes (not through a
        gateway: the gateway runs the helper and retries itself)."""
        return not self._conns.through_gateway(server) and helper_refused(
            self._conns.spec(server).target, exc
        )

    def _call_once(
        self,
        client: Client,
        server: str,
        tool: McpTool,
        args: dict[str, Any],
        deadline: Deadline,
        on_progress: Callable[[Progress], None] | None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        for rounds in range(MAX_URL_ELICITATION_ROUNDS + 1):
            try:
                return client._call_tool(deadline, tool.tool_name, args, on_progress, cancel_event)
            except UrlElicitationRequired as exc:
                if rounds == MAX_URL_ELICITATION_ROUNDS:
                    raise
                self._url_elicitations(server, exc, deadline)
        raise AssertionError("unreachable")  # pragma: no cover

    def _url_elicitations(
        self, server: str, exc: UrlElicitationRequired, deadline: Deadline
    ) -> None:
        """Run the elicitations a -32042 error lists; re-raise ``exc`` unless all accepted."""
        from ..protocol.types import Params

        items = exc.data.get("elicitations") if isinstance(exc.data, dict) else None
        if not isinstance(items, list) or not items:
            raise exc
        for item in items:
            if not isinstance(item, dict):
                raise exc
            answer = self._elicitation.answer(server, Params.model_validate(item))
            action = (
                answer.get("action")
                if isinstance(answer, Mapping)
                else getattr(answer, "action", None)
            )
            if action != "accept":
                raise exc
            eid = item.get("elicitationId")
            if isinstance(eid, str):
                self._elicitation.wait_completed(eid, deadline.bound(self._elicitation_timeout))

    def submit(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_event: Callable[[ToolEvent], Any] | None = None,
    ) -> Future[CallToolResult]:
        """``call_tool`` on a worker thread; returns a ``concurrent.futures.Future``.

        ``future.cancel()`` abandons the call and tells the server
        (``notifications/cancelled``); ``future.result()`` then raises
        ``concurrent.futures.CancelledError``. Other failures are the exceptions
        ``call_tool`` raises, from ``future.result()``.
        """
        args = dict(arguments or {})
        return self._submitter.submit(
            lambda cancel: self.call_tool(
                name, args, timeout=timeout, on_event=on_event, cancel_event=cancel
            )
        )

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        """Get the prompt behind the command ``mcp__<server>__<prompt>``
        (``timeout``: for all of it, connecting and listing included)."""
        deadline = _current(_deadline(timeout))
        server, _ = self._resolve(name)
        prompts = self._server_list("prompts", server, deadline)
        prompt = self._find(prompts, name, server, "prompts", deadline)
        args = {str(k): str(v) for k, v in (arguments or {}).items()}
        return self._on_server(
            server,
            deadline,
            lambda client: client._get_prompt(
                capped(deadline, client.timeout), prompt.prompt_name, args
            ),
        )

    def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        timeout: float | None = None,
    ) -> Task:
        """Start ``mcp__<server>__<tool>`` as a task (permissions checked as for
        ``call_tool``) and return its handle; ``task.id`` can be stored and collected later,
        by another process, with ``resume_task(server, task_id)``.

        Raises:
            PermissionDenied, ConfigError: as for ``call_tool``.
            LocalProtocolError: the server supports no tasks.
        """
        deadline = _current(_deadline(timeout))
        server, tool = self._tool_for(name, deadline)
        args = dict(arguments or {})
        self._permissions.check(tool, args, in_process=self._conns.spec(server).in_process)
        # Under a lease while it starts; then the handle holds the server until its task
        # is collected (the client tells the Hub of it: see Connections._began).
        with self._conns.lease(server, deadline) as client:
            return client._start_task(capped(deadline, client.timeout), tool.tool_name, args, ttl)

    def resume_task(self, server: str, task_id: str, *, timeout: float | None = None) -> Task:
        """The handle of a task of ``server`` started earlier, perhaps by another process
        (see ``Client.resume_task``); ``timeout``: for all of it, connecting included.

        Raises:
            ConfigError: no server of that name is configured.
            InvalidParams: the server does not know ``task_id`` (a stdio server started by
                this Hub knows no earlier process's tasks: run it behind the gateway).
        """
        deadline = _current(_deadline(timeout))
        with self._conns.lease(server, deadline) as client:  # (held as for call_tool_as_task)
            return client._resume_task(capped(deadline, client.timeout), task_id)

    def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> ReadResourceResult:
        """Read ``uri`` from ``server``, or from the server that lists it
        (``timeout``: for all of it, connecting and listing included).

        Raises:
            ConfigError: no server given and none (or several) list ``uri``.
        """
        deadline = _current(_deadline(timeout))
        if server is None:
            owners = sorted({r.server for r in self._pool("resources", deadline) if r.uri == uri})
            if len(owners) != 1:
                raise ConfigError(
                    f"no server lists resource {uri!r}; say which server to read it from"
                    if not owners
                    else f"several servers list {uri!r} ({', '.join(owners)}); say which one"
                )
            server = owners[0]
        return self._on_server(
            server,
            deadline,
            lambda client: client._read_resource(capped(deadline, client.timeout), uri),
        )

    # --- helpers ---------------------------------------------------------------------------------

    # --- the Hub's own tools (built by _agent_tools, run here) ---------------------------------

    # --- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection (in parallel, bounded); idempotent."""
        with self._close_lock:
            self._submitter.close()
            self._conns.close()

    @property
    def closed(self) -> bool:
        return self._conns.closed

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        """``<mcp_lite.Hub 2 servers: demo=connected (4 tools), db=failed>``; a closed Hub
        says ``closed``. No I/O, and never a target, header or secret."""
        status = self.status()
        count = plural(len(status), "server")
        if self.closed:
            return f"<mcp_lite.Hub closed, {count}>"
        states = [
            f"{name}={s.state}"
            + (f" ({plural(s.tools_count, 'tool')})" if s.tools_count is not None else "")
            for name, s in status.items()
        ]
        return (
            f"<mcp_lite.Hub {count}: {', '.join(states)}>" if states else "<mcp_lite.Hub 0 servers>"
        )


def _meta_of(tool: McpTool) -> dict[str, Any] | None:
    """The tool definition's ``_meta`` (its result size limit may be there)."""
    return tool.tool.meta if tool.tool is not None else None


def _ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


def _with_hooks(
    options: Mapping[str, Any] | None, hooks: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """``client_options`` plus the Hub's ``event_hooks`` (checked here, once)."""
    if not hooks:
        return options or {}
    from ..events import normalize_hooks

    return {**(options or {}), "event_hooks": normalize_hooks(hooks)}


def _route_of(gateway: str | bool | None, user: str | int | None = None) -> GatewayRoute | None:
    """The gateway of ``gateway=`` (None: ``MCP_LITE_GATEWAY``; False: none), run by this
    user, root or ``user`` (None: ``MCP_LITE_GATEWAY_USER``)."""
    url = gateway_of(gateway)
    return None if url is None else GatewayRoute(url, user)
