"""A rich MCP server built with the official Python SDK (PyPI ``mcp`` 2.x), used as a real peer.

Run it over any transport, always bound to 127.0.0.1::

    python official_server.py stdio
    python official_server.py sse --port N
    python official_server.py http --port N [--stateless] [--json-response]

What it offers (the tests rely on these names):

- tools: ``add(a, b)`` (structured ``{"result": a+b}``), ``weather(city)`` (typed structured
  output), ``fail(message)`` (a result with ``isError``), ``slow(steps, delay)`` (progress
  notifications), ``ask_name()`` (elicitation), ``summarize(text)`` (sampling),
  ``show_roots()`` (roots listing), ``chatty()`` (logs at debug, info, warning and error),
  ``touch(uri)`` (a ``resources/updated`` to the 2026-07-28 listen streams), ``echo(text)``, and ``filler_00`` … ``filler_09``. ``tools/list`` is served in pages of
  ``PAGE_SIZE`` so a client must follow ``nextCursor``.
- resources: ``memo://readme`` (text), ``memo://logo`` (binary), template ``memo://notes/{name}``.
- prompts: ``greeting(name, style="plain")``; completion for its ``style`` argument and for the
  ``name`` variable of the notes template.
- ``logging/setLevel``: recorded; ``chatty`` then only sends messages at or above that level.

Elicitation, sampling and roots go through the SDK's resolver markers, so the same tools work
on the handshake era (server-to-client requests mid-call) and on 2026-07-28 (input_required
results), whichever the client negotiates.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import warnings
from typing import Annotated, Any

from pydantic import BaseModel, Field

warnings.filterwarnings("ignore")  # the SDK flags logging/roots as deprecated on 2026-07-28

from mcp.server.mcpserver import (  # noqa: E402
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import (  # noqa: E402
    Completion,
    CreateMessageResult,
    EmptyResult,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
)

PAGE_SIZE = 5
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

server: MCPServer[Any] = MCPServer(
    "official-peer",
    version="1.0.0",
    instructions="A test peer built with the official MCP Python SDK.",
)
_state: dict[str, Any] = {"log_level": None}


# --- tools ------------------------------------------------------------------------------


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


class Weather(BaseModel):
    city: str
    temperature: float = Field(description="degrees Celsius")
    conditions: str


@server.tool()
def weather(city: str) -> Weather:
    """Typed structured output: a fixed forecast for any city."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@server.tool()
def fail(message: str = "it broke") -> str:
    """Always fails: the result has isError set and carries the message."""
    raise ToolError(message)


@server.tool()
async def slow(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
    """Sleeps `steps` times, reporting progress after each step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"done after {steps} steps"


class Person(BaseModel):
    name: str


def _ask_person() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


@server.tool()
def ask_name(answer: Annotated[ElicitationResult[Person], Resolve(_ask_person)]) -> str:
    """Asks the client (elicitation) for a name and greets it."""
    if answer.action == "accept":
        return f"Hello, {answer.data.name}!"
    return f"No name given ({answer.action})"


def _sample_summary(text: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
    )


@server.tool()
def summarize(text: str, sampled: Annotated[CreateMessageResult, Resolve(_sample_summary)]) -> str:
    """Asks the client's LLM (sampling) for a summary."""
    content = sampled.content
    got = content.text if isinstance(content, TextContent) else str(content)
    return f"summary by {sampled.model}: {got}"


def _list_roots() -> ListRoots:
    return ListRoots()


@server.tool()
def show_roots(roots: Annotated[ListRootsResult, Resolve(_list_roots)]) -> str:
    """Lists the client's roots, one URI per line."""
    return "\n".join(str(r.uri) for r in roots.roots) or "(no roots)"


@server.tool()
async def touch(ctx: Context, uri: str = "memo://readme") -> str:
    """Says ``uri`` changed, to the 2026-07-28 listen streams subscribed to it."""
    await ctx.notify_resource_updated(uri)
    return "touched"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Logs one message at each of debug, info, warning and error."""
    floor = _state["log_level"]
    sent = []
    for level in ("debug", "info", "warning", "error"):
        if floor is None or LEVELS.index(level) >= LEVELS.index(floor):
            await ctx.log(level, f"{level} message", logger_name="chatty")
            sent.append(level)
    return "logged " + ",".join(sent)


def _make_filler(i: int) -> None:
    def filler() -> str:
        return f"filler {i}"

    server.add_tool(filler, name=f"filler_{i:02d}", description=f"Filler tool {i} for pagination.")


for _i in range(10):
    _make_filler(_i)


async def _paged_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
    tools = await server.list_tools()
    start = int(params.cursor) if params is not None and params.cursor else 0
    page = tools[start : start + PAGE_SIZE]
    more = start + PAGE_SIZE < len(tools)
    return ListToolsResult(tools=page, next_cursor=str(start + PAGE_SIZE) if more else None)


server._lowlevel_server.add_request_handler("tools/list", PaginatedRequestParams, _paged_list_tools)


# --- logging level -----------------------------------------------------------------------


async def _set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    _state["log_level"] = params.level
    return EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)


# --- resources ---------------------------------------------------------------------------

NOTES = {"alpha": "first note", "beta": "second note", "gamma": "third note"}


@server.resource("memo://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "This is the readme."


@server.resource("memo://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return base64.b64decode("iVBORw0KGgo=")


@server.resource("memo://notes/{name}", name="note", mime_type="text/plain")
def note(name: str) -> str:
    return NOTES.get(name, f"no note called {name}")


# --- prompts and completion ----------------------------------------------------------------

STYLES = ["plain", "pirate", "poem", "polite"]


@server.prompt()
def greeting(name: str, style: str = "plain") -> str:
    """Greets someone in a chosen style."""
    return f"Write a {style} greeting for {name}."


@server.completion()
async def _complete(ref: Any, argument: Any, context: Any) -> Completion | None:
    if argument.name == "style":
        values = [s for s in STYLES if s.startswith(argument.value)]
    elif argument.name == "name":
        values = [n for n in NOTES if n.startswith(argument.value)]
    else:
        return None
    return Completion(values=values, total=len(values), has_more=False)


# --- entry point ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio")
    sse = sub.add_parser("sse")
    sse.add_argument("--port", type=int, required=True)
    http = sub.add_parser("http")
    http.add_argument("--port", type=int, required=True)
    http.add_argument("--stateless", action="store_true")
    http.add_argument("--json-response", action="store_true")
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=args.port,
            stateless_http=args.stateless,
            json_response=args.json_response,
        )


if __name__ == "__main__":
    main()
