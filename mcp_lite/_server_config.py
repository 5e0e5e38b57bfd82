"""The schema of ONE server entry (a ``.mcp.json`` entry, a settings file's ``mcpServers``
entry, a ``connect(dict)`` target) and THE validator that checks it (``type`` inferred,
``${VAR}`` expanded once, unknown keys named with a "did you mean"); used by the Hub's loader
and by ``Client``, which imports it lazily (it imports pydantic).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from ._secrets import REDACTED, header_problem, redact_url
from .errors import ConfigError

if TYPE_CHECKING:
    from .server import Server

__all__ = [
    "DEFAULT_IDE_AUTH_HEADER",
    "HttpServerConfig",
    "OAuthConfig",
    "ProxyServerConfig",
    "SdkServerConfig",
    "ServerConfig",
    "ServerTarget",
    "SseIdeServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "TYPE_ALIASES",
    "WsIdeServerConfig",
    "WsServerConfig",
    "did_you_mean",
    "expand_server",
    "expand_vars",
    "known_keys",
    "normalize_url",
    "validate_target",
    "with_type",
]

DEFAULT_IDE_AUTH_HEADER = "X-Claude-Code-Ide-Authorization"

_VAR = re.compile(r"\$\{([^}:]+)(?::-([^}]*))?\}")


# --- ${VAR} expansion -----------------------------------------------------------------------


def expand_vars(value: str, environ: Mapping[str, str], missing: list[str]) -> str:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced from ``environ``.

    ``${VAR:-default}`` takes the default when ``VAR`` is unset or empty (the shell's
    meaning of ``:-``). A ``${VAR}`` with no value is left as written and its name appended
    to ``missing``. Expansion is one pass: a substituted value or a default that itself
    contains ``${...}`` is not expanded again. ``$VAR`` without braces is not touched.
    """

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is not None:  # set but empty, no default
            return found
        if name not in missing:
            missing.append(name)
        return match.group(0)

    return _VAR.sub(replace, value)


def expand_server(
    raw: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """A copy of one raw server entry with variables expanded where Claude Code expands them:
    ``command``, each of ``args``, the values of ``env``, ``url`` and the values of
    ``headers``. Keys are never expanded; values that are not strings are left for
    validation to reject. Returns the copy and the names of missing variables, in order.
    """
    out = dict(raw)
    missing: list[str] = []
    for key in ("command", "url"):
        if isinstance(out.get(key), str):
            out[key] = expand_vars(out[key], environ, missing)
    if isinstance(out.get("args"), list):
        out["args"] = [
            expand_vars(a, environ, missing) if isinstance(a, str) else a for a in out["args"]
        ]
    for key in ("env", "headers"):
        if isinstance(out.get(key), Mapping):
            out[key] = {
                k: expand_vars(v, environ, missing) if isinstance(v, str) else v
                for k, v in out[key].items()
            }
    return out, missing


# --- models ---------------------------------------------------------------------------------


class _Base(BaseModel):
    """Fields every server type has; unknown fields are kept (forward compatible).

    ``repr`` shows no secret: header, env and token values, arguments and unknown fields are
    replaced by ``[redacted]``, and the URL loses its query values and password.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    timeout: float | None = Field(default=None, gt=0)
    """Seconds per request for this server (the Hub's default when ``None``)."""
    disabled: bool = False
    extensions: dict[str, dict[str, Any]] | None = None
    """Extensions to declare to this server, ``{id: settings}`` (see ``connect``)."""

    def __repr_args__(self) -> Any:
        shown = (
            "type",
            "command",
            "timeout",
            "disabled",
            "ideName",
            "authHeader",
            "name",
            "idleShutdown",
            "maxLifetime",
        )
        for key, value in super().__repr_args__():
            if key == "url" and isinstance(value, str):
                yield key, redact_url(value)
            elif key in shown or value in (None, [], {}):
                yield key, value
            else:
                yield key, REDACTED


class StdioServerConfig(_Base):
    """A subprocess speaking NDJSON on stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    # Read by the Hub (servers that recycle), over its idle_timeout / max_lifetime; 0: off
    # for this server. Not ``idleTimeout``: remote entries use that key for their stream.
    idleShutdown: float | None = Field(default=None, ge=0)
    """Seconds unused after which the Hub stops this server (it starts on the next call)."""
    maxLifetime: float | None = Field(default=None, ge=0)
    """Seconds of life after which the Hub restarts this server, between calls."""


class OAuthConfig(BaseModel):
    """Pre-registered OAuth client settings of an ``http``/``sse`` server."""

    model_config = ConfigDict(extra="allow")

    clientId: str | None = None
    callbackPort: int | None = Field(default=None, ge=1, le=65535)
    scopes: list[str] | str | None = None


class _Remote(_Base):
    _schemes: ClassVar[tuple[str, ...]] = ("http", "https")

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    headersHelper: str | None = Field(default=None, min_length=1)
    """A shell command printing a JSON object of headers, run at each connect (its output
    merged over ``headers``); see ``mcp_lite.transports._headers_helper``."""
    retry: bool | dict[str, Any] | None = None
    """HTTP transient-error retries: ``false``, or ``mcp_lite.Retry``'s fields."""

    @field_validator("retry")
    @classmethod
    def _check_retry(cls, retry: Any) -> Any:
        from ._http.retry import as_retry

        as_retry(retry)  # ConfigError (a ValueError) names the bad setting
        return retry

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in cls._schemes:
            wanted = " or ".join(f"{s}://" for s in cls._schemes)
            raise ValueError(f"must be a {wanted} URL, got {redact_url(url)!r}")
        return url

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        # CR/LF would split the request: refused here, naming the header (never the value).
        for name, value in headers.items():
            problem = header_problem(name, value)
            if problem is not None:
                raise ValueError(problem)
        return headers


class HttpServerConfig(_Remote):
    """Streamable HTTP (falls back to legacy SSE); ``unix://`` URLs: over a Unix socket."""

    _schemes = ("http", "https", "unix")
    type: Literal["http"] = "http"
    oauth: OAuthConfig | None = None


class SseServerConfig(_Remote):
    """Legacy HTTP+SSE."""

    type: Literal["sse"] = "sse"
    oauth: OAuthConfig | None = None


class WsServerConfig(_Remote):
    """WebSocket, one JSON-RPC message per text frame."""

    _schemes = ("ws", "wss")
    type: Literal["ws"] = "ws"


class SseIdeServerConfig(_Remote):
    """An IDE's local SSE endpoint (no OAuth)."""

    type: Literal["sse-ide"] = "sse-ide"
    ideName: str | None = None


class WsIdeServerConfig(_Remote):
    """An IDE's local WebSocket; ``authToken`` is sent in the ``authHeader`` header."""

    _schemes = ("ws", "wss")
    type: Literal["ws-ide"] = "ws-ide"
    ideName: str | None = None
    authToken: str | None = Field(default=None, repr=False)
    authHeader: str = Field(
        default=DEFAULT_IDE_AUTH_HEADER,
        validation_alias=AliasChoices("authHeader", "authHeaderName"),
    )

    @field_validator("authToken")
    @classmethod
    def _check_token(cls, token: str | None) -> str | None:
        if token is not None and header_problem("authToken", token) is not None:
            raise ValueError("has a line break or NUL in it (refused)")
        return token


class ProxyServerConfig(_Remote):
    """Streamable HTTP through a proxy with a bearer-token provider (Python only: a
    callable, a token string or an object with ``token()``/``refresh()``)."""

    type: Literal["proxy"] = "proxy"
    token_provider: Any = Field(
        default=None, validation_alias=AliasChoices("token_provider", "tokenProvider", "auth")
    )


class SdkServerConfig(_Base):
    """An in-process ``mcp_lite.Server`` (only from ``dynamic=``: files cannot hold one)."""

    type: Literal["sdk"] = "sdk"
    name: str | None = None
    server: Any

    @field_validator("server")
    @classmethod
    def _check_server(cls, server: Any) -> Any:
        from .server import Server

        if not isinstance(server, Server):
            raise ValueError(
                "an 'sdk' server is a mcp_lite.Server registered in code "
                "(load_config(dynamic={name: server}))"
            )
        return server


ServerConfig = Annotated[
    StdioServerConfig
    | HttpServerConfig
    | SseServerConfig
    | WsServerConfig
    | SseIdeServerConfig
    | WsIdeServerConfig
    | ProxyServerConfig
    | SdkServerConfig,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ServerConfig)
_TYPES = ("stdio", "http", "sse", "ws", "sse-ide", "ws-ide", "proxy", "sdk")


class ServerTarget(dict[str, Any]):
    """A ``connect()`` target from ``ServerEntry.target()`` or ``validate_target``: already
    validated, its ``${VAR}`` already expanded, so ``connect`` takes it as is (expanding
    twice would expand what a variable's value happens to contain)."""


def _target_of(config: ServerConfig) -> ServerTarget | Server:
    if isinstance(config, SdkServerConfig):
        server: Server = config.server
        return server
    if isinstance(config, StdioServerConfig):
        target = ServerTarget(
            command=config.command, args=list(config.args), env=dict(config.env), cwd=config.cwd
        )
        if config.extensions is not None:  # declared by the client connect() makes of it
            target["extensions"] = config.extensions
        return target
    out = config.model_dump(exclude={"timeout", "disabled"}, exclude_none=True)
    if isinstance(config, WsIdeServerConfig):
        out["authHeaderName"] = out.pop("authHeader")
    return ServerTarget(out)


# --- known keys ---------------------------------------------------------------------------

# Keys the transports read from a config dict beyond the model's fields (see
# ``mcp_lite.transports._remote``); ``name`` names the client in logs.
_TRANSPORT_KEYS: dict[str, tuple[str, ...]] = {
    "http": ("connectTimeout", "readTimeout", "idleTimeout", "auth", "token_provider"),
    "sse": ("connectTimeout", "readTimeout", "idleTimeout", "auth", "token_provider"),
    "proxy": ("connectTimeout", "readTimeout", "idleTimeout"),
    "sse-ide": ("connectTimeout", "readTimeout", "idleTimeout"),
    "ws": ("connectTimeout", "pingInterval"),
    "ws-ide": ("connectTimeout", "pingInterval"),
}
# Keys Claude Code writes that change nothing here, accepted so that its files load:
# ``alwaysLoad`` (read by the Hub), the proxy's server ``id``, the IDE's window flag.
_CLAUDE_KEYS: dict[str, tuple[str, ...]] = {
    "proxy": ("id",),
    "sse-ide": ("ideRunningInWindows",),
    "ws-ide": ("ideRunningInWindows",),
}


def known_keys(kind: str, model: Any) -> set[str]:
    """Every key a server config of type ``kind`` (pydantic class ``model``) may hold:
    the model's fields and their aliases, the transport's own keys, the Claude Code keys
    that change nothing here, ``type``, ``name`` and ``alwaysLoad``."""
    keys = {"type", "name", "alwaysLoad", *_TRANSPORT_KEYS.get(kind, ())}
    keys.update(_CLAUDE_KEYS.get(kind, ()))
    for field_name, info in model.model_fields.items():
        keys.add(field_name)
        alias = info.validation_alias
        keys.update(getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else []))
    if "token_provider" in keys:
        keys.add("tokenProvider")
    return keys


# Spelled-out names of short keys, so that "enviroment" still points at "env".
_LONG_FORMS = {
    "environment": "env",
    "arguments": "args",
    "argv": "args",
    "cmd": "command",
    "workdir": "cwd",
    "directory": "cwd",
}


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known key, or an empty string."""
    import difflib

    choices = sorted(known)
    lowered = {k.lower(): k for k in choices}
    close = [lowered[key.lower()]] if key.lower() in lowered else []
    close = close or difflib.get_close_matches(key, choices, n=1, cutoff=0.7)
    if not close:
        longer = [long for long, short in _LONG_FORMS.items() if short in lowered]
        spelled = difflib.get_close_matches(key.lower(), longer, n=1, cutoff=0.7)
        close = [_LONG_FORMS[spelled[0]]] if spelled else []
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- type inference -----------------------------------------------------------------------

TYPE_ALIASES = {
    "claudeai-proxy": "proxy",
    "streamable-http": "http",
    "streamableHttp": "http",
    "in-process": "sdk",
}
"""Other spellings of ``type`` seen in the wild, mapped to ours."""


def with_type(raw: Mapping[str, Any]) -> dict[str, Any] | str:
    """``raw`` with ``type`` filled in or normalized, or the reason it cannot be."""
    out = dict(raw)
    kind = out.get("type")
    if kind is None:
        if "command" in out:
            out["type"] = "stdio"
        elif isinstance(out.get("url"), str):
            scheme = out["url"].split("://", 1)[0].lower()
            out["type"] = "ws" if scheme in ("ws", "wss") else "http"
        elif "server" in out:
            out["type"] = "sdk"
        else:
            for key in out:  # "commmand": name the typo, not only what is missing
                hint = did_you_mean(str(key), ("command", "type", "url"))
                if hint:
                    return f"unknown key {str(key)!r}{hint}; give 'command' (stdio) or 'type' and 'url'"
            return "type: missing; give 'command' (stdio) or 'type' and 'url'"
    elif isinstance(kind, str):
        out["type"] = TYPE_ALIASES.get(kind, kind)
    return out


# --- signatures -----------------------------------------------------------------------------


def normalize_url(url: str) -> str:
    """``url`` compared by content: scheme and host lower-cased, default port dropped,
    trailing ``/`` of the path dropped, fragment dropped; query kept as written."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    default = {"http": 80, "ws": 80, "https": 443, "wss": 443}.get(scheme)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != default:
        netloc += f":{port}"
    if parts.username or parts.password:
        userinfo = parts.username or ""
        if parts.password:
            userinfo += f":{parts.password}"
        netloc = f"{userinfo}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


# --- validation -----------------------------------------------------------------------------


def _format_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = list(err["loc"])
        if loc and loc[0] in _TYPES:  # the discriminated union's tag
            loc = loc[1:]
        where = ".".join(str(p) for p in loc) or "type"
        message = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


class _Invalid(Exception):
    """One entry's validation failure; ``prefix``: say which server and source."""

    def __init__(self, message: str, *, prefix: bool = True) -> None:
        super().__init__(message)
        self.message, self.prefix = message, prefix


def _validate(raw: Any, environ: Mapping[str, str]) -> ServerConfig:
    """THE validator of a server entry (Hub files and ``connect(dict)`` alike): ``type``
    inferred, ``${VAR}`` expanded once, pydantic validation, and no key that nothing reads.

    An unknown key is an error, never a warning: ``"arg"`` for ``"args"`` would otherwise
    start ``python`` as a REPL that never answers, and ``"enviroment"`` would drop the
    variables, both ending in a timeout far from their cause.

    Raises:
        _Invalid: why the entry cannot be used.
    """
    if not isinstance(raw, Mapping):
        raise _Invalid(f"expected an object, got {type(raw).__name__}")
    typed = with_type(raw)
    if isinstance(typed, str):
        raise _Invalid(typed)
    expanded, missing = expand_server(typed, environ)
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise _Invalid(f"missing environment variable{plural} {', '.join(missing)}", prefix=False)
    try:
        config: ServerConfig = _ADAPTER.validate_python(expanded)
    except ValidationError as exc:
        raise _Invalid(_format_errors(exc)) from None
    known = known_keys(config.type, type(config))
    unknown = [str(k) for k in expanded if str(k) not in known]
    if unknown:
        key = unknown[0]
        raise _Invalid(
            f"unknown key {key!r} for a {config.type!r} server{did_you_mean(key, known)}; "
            f"known keys: {', '.join(sorted(known))}"
        )
    return config


def validate_target(
    raw: Mapping[str, Any], *, environ: Mapping[str, str] | None = None
) -> ServerTarget | Server:
    """A config dict given to ``mcp_lite.connect``, checked by the Hub's validator and with
    ``${VAR}``/``${VAR:-default}`` expanded from ``environ`` (default ``os.environ``).

    A key no transport reads is an error (a typo would otherwise end in a timeout), with a
    suggestion when one is close; config files are held to the same rule.

    Raises:
        ConfigError: the dict is not a valid server config; the message names the key.
    """
    try:
        config = _validate(raw, os.environ if environ is None else environ)
    except _Invalid as exc:
        raise ConfigError(f"invalid server config: {exc.message}") from None
    return _target_of(config)
