"""The demo MCP server, shipped inside the package so every example runs anywhere:
``python -m mcp_lite.demo`` serves it over stdio (``--http 8000``: Streamable HTTP at
http://127.0.0.1:8000/mcp), in both protocol eras, with the tools ``add``, ``word_count``,
``now`` and ``countdown``, two resources and the prompt ``summarize``.
"""

from __future__ import annotations

import datetime
import time
import zoneinfo
from typing import Annotated

from pydantic import Field

from .errors import ResourceNotFound
from .server import Context, Server

server = Server(
    "demo",
    version="1.0.0",
    instructions="A few small tools (arithmetic, text statistics, clock), a readme and notes.",
)

_NOTES = {"welcome": "Hello from the mcp_lite demo server.", "todo": "Write more demos."}


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations={"readOnlyHint": True})
def word_count(text: Annotated[str, Field(description="The text to analyse")]) -> dict[str, int]:
    """Count the words, lines and characters of a text."""
    return {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}


@server.tool(annotations={"readOnlyHint": True})
def now(
    tz: Annotated[str, Field(description="An IANA time zone, e.g. Europe/Paris")] = "UTC",
) -> str:
    """The current date and time in a time zone, in ISO 8601."""
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc
    return datetime.datetime.now(zone).isoformat(timespec="seconds")


@server.tool()
def countdown(n: Annotated[int, Field(ge=0, le=60)], ctx: Context) -> str:
    """Count down from n to zero, one step every 0.1 s, reporting progress."""
    for i in range(n):
        if ctx.cancelled.is_set():
            return "cancelled"
        ctx.report_progress(i, total=n, message=f"{n - i} to go")
        ctx.log("debug", {"remaining": n - i}, logger="countdown")
        time.sleep(0.1)
    ctx.report_progress(n, total=n, message="liftoff")
    return "liftoff"


@server.resource("demo://readme", description="What this server offers", mime_type="text/markdown")
def readme() -> str:
    return (
        "# demo\n\nTools: add, word_count, now, countdown.\n"
        "Resources: demo://readme, demo://notes/{name}.\nPrompts: summarize.\n"
    )


@server.resource("demo://notes/{name}", description="A note by name", mime_type="text/plain")
def note(name: str) -> str:
    """A short note; known names: welcome, todo."""
    try:
        return _NOTES[name]
    except KeyError:
        raise ResourceNotFound(
            f"no note named {name!r}", data={"uri": f"demo://notes/{name}"}
        ) from None


@server.prompt(description="Ask the model for a short summary of a text")
def summarize(text: str) -> str:
    return f"Summarize the following text in two sentences:\n\n{text}"


@server.completion()
def complete(ref: dict[str, object], argument: dict[str, object], context: object) -> list[str]:
    """Complete note names for the demo://notes/{name} template."""
    if ref.get("type") == "ref/resource" and argument.get("name") == "name":
        prefix = str(argument.get("value", ""))
        return sorted(n for n in _NOTES if n.startswith(prefix))
    return []


def main(argv: list[str] | None = None) -> None:
    """Serve over stdio, or ``--http PORT`` as Streamable HTTP at ``/mcp`` on 127.0.0.1."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--http":
        server.run_http(port=int(args[1]))
    else:  # other arguments are ignored: configs may tell two demo entries apart by them
        server.run_stdio()


if __name__ == "__main__":
    main()
